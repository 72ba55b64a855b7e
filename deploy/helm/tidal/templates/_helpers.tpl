{{/* The chart's name, nameOverride (as Cluster Autoscaler's chart). */}}
{{- define "tidal.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride, else the release's name when it
holds the chart's name, else release-name. */}}
{{- define "tidal.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "tidal.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pods' selector. */}}
{{- define "tidal.selector" -}}
app.kubernetes.io/name: {{ include "tidal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "tidal.labels" -}}
{{ include "tidal.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The ServiceAccount's name (rbac.serviceAccount, as Cluster Autoscaler's chart). */}}
{{- define "tidal.serviceAccountName" -}}
{{- if .Values.rbac.serviceAccount.create -}}
{{- default (include "tidal.fullname" .) .Values.rbac.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.rbac.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The flag name of an extraArgs key: Cluster Autoscaler's chart lets a
flag repeat as key_1, key_2, ... and passes what precedes the "_". */}}
{{- define "tidal.flagName" -}}
{{- regexFind "^[^_]+" . -}}
{{- end -}}

{{/* The value extraArgs gives a flag (under its name or a _N key), or "". */}}
{{- define "tidal.extraArg" -}}
{{- $flag := index . 1 -}}
{{- $found := "" -}}
{{- range $key, $value := (index . 0).Values.extraArgs -}}
{{- if and (eq (include "tidal.flagName" $key) $flag) (not (kindIs "invalid" $value)) -}}
{{- $found = $value -}}
{{- end -}}
{{- end -}}
{{- $found -}}
{{- end -}}

{{/* The leader Lease's name (--leader-elect-resource-name). */}}
{{- define "tidal.leaseName" -}}
{{- include "tidal.extraArg" (list . "leader-elect-resource-name") | default "tidal" -}}
{{- end -}}

{{/* The status ConfigMap's name (--status-config-map-name). */}}
{{- define "tidal.statusName" -}}
{{- include "tidal.extraArg" (list . "status-config-map-name") | default "tidal-status" -}}
{{- end -}}

{{/* The expander: extraArgs.expander (Cluster Autoscaler's chart) over expander. */}}
{{- define "tidal.expander" -}}
{{- include "tidal.extraArg" (list . "expander") | default .Values.expander -}}
{{- end -}}

{{/* Cluster Autoscaler's Lease to stand aside for (--cluster-autoscaler-lease),
NAMESPACE/NAME or "". */}}
{{- define "tidal.caLease" -}}
{{- include "tidal.extraArg" (list . "cluster-autoscaler-lease") | default .Values.clusterAutoscalerLease -}}
{{- end -}}

{{/* "true" when tidal patches pods (the pod loop with
--scale-in-deletion-cost): the ClusterRole grants pods patch, and the
policy tidal-pod-writes confines it. */}}
{{- define "tidal.podPatch" -}}
{{- if and .Values.podLoop.enabled .Values.podLoop.scaleInDeletionCost -}}true{{- end -}}
{{- end -}}

{{/* Values that would install a tidal that cannot work: no node groups on
AWS (nothing to scale), Cluster Autoscaler's image (from its values file),
both explicit groups and discovery (tidal refuses them at start). */}}
{{- define "tidal.checkValues" -}}
{{- $v := .Values -}}
{{- if and (eq $v.cloudProvider "aws") (not (or $v.nodes $v.autoscalingGroups $v.autoDiscovery.clusterName $v.autoDiscovery.specs)) -}}
{{- fail "tidal: no node groups: set autoscalingGroups (name, minSize, maxSize), nodes (MIN:MAX:NAME) or autoDiscovery.clusterName" -}}
{{- end -}}
{{- if contains "cluster-autoscaler" $v.image.repository -}}
{{- fail (printf "tidal: image.repository %s is Cluster Autoscaler's image, from its values file: leave image.repository out or set tidal's (ghcr.io/tidal-autoscaler/tidal)" $v.image.repository) -}}
{{- end -}}
{{- if include "tidal.extraArg" (list . "scale-in-deletion-cost") -}}
{{- fail "tidal: set podLoop.scaleInDeletionCost, not extraArgs.scale-in-deletion-cost: the value also decides whether tidal may patch pods" -}}
{{- end -}}
{{- if and (or $v.nodes $v.autoscalingGroups) (or $v.autoDiscovery.clusterName $v.autoDiscovery.specs) -}}
{{- fail "tidal: autoscalingGroups or nodes cannot be combined with autoDiscovery (as with Cluster Autoscaler's --nodes and --node-group-auto-discovery): use one or the other" -}}
{{- end -}}
{{- end -}}

{{/* tidal's flags from the values. */}}
{{- define "tidal.args" -}}
- --cloud-provider={{ .Values.cloudProvider }}
- --address=:{{ .Values.port }}
- --namespace={{ .Release.Namespace }}
{{- range .Values.nodes }}
- --nodes={{ . }}
{{- end }}
{{- range .Values.autoscalingGroups }}
- --nodes={{ required "autoscalingGroups[].minSize is required" .minSize }}:{{ required "autoscalingGroups[].maxSize is required" .maxSize }}:{{ required "autoscalingGroups[].name is required" .name }}
{{- end }}
{{- if .Values.autoDiscovery.clusterName }}
- --node-group-auto-discovery=asg:tag={{ tpl (join "," .Values.autoDiscovery.tags) . }}
{{- end }}
{{- range .Values.autoDiscovery.specs }}
- --node-group-auto-discovery={{ . }}
{{- end }}
{{- with .Values.awsRegion }}
- --aws-region={{ . }}
{{- end }}
- --expander={{ include "tidal.expander" . }}
- --cluster-autoscaler-lease={{ include "tidal.caLease" . }}
- --provision-ahead={{ .Values.provisionAhead }}
- --hpa={{ .Values.podLoop.enabled }}
- --hpa-objects={{ .Values.podLoop.hpaObjects }}
- --scale-in-deletion-cost={{ .Values.podLoop.scaleInDeletionCost }}
{{- with .Values.podLoop.prometheusURL }}
- --prometheus-url={{ . }}
{{- end }}
{{- range $key, $value := .Values.extraArgs }}
{{- $flag := include "tidal.flagName" $key }}
{{- if not (has $flag (list "expander" "cluster-autoscaler-lease" "scale-in-deletion-cost")) }}
{{- if kindIs "invalid" $value }}
- --{{ $flag }}
{{- else }}
- --{{ $flag }}={{ $value }}
{{- end }}
{{- end }}
{{- end }}
{{- range .Values.customArgs }}
- {{ . }}
{{- end }}
{{- end -}}
