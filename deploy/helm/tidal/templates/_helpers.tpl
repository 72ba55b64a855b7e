{{/* The image tidal's chart ships, without a tag. */}}
{{- define "tidal.defaultRepository" -}}ghcr.io/tidal-autoscaler/tidal{{- end -}}

{{/* "true" when the values name Cluster Autoscaler's image: its repository
(image.repository holding "cluster-autoscaler"), or with tidal's repository
a tag of Cluster Autoscaler's releases (v1.<Kubernetes minor>.<patch>,
minor 20 on), which tidal does not publish. tidal's image and version run
instead, and NOTES says so. */}}
{{- define "tidal.caImage" -}}
{{- $i := .Values.image -}}
{{- if or (contains "cluster-autoscaler" $i.repository) (and (eq $i.repository (include "tidal.defaultRepository" .)) (regexMatch "^v1\\.[2-9][0-9]\\.[0-9]+" (toString $i.tag))) -}}true{{- end -}}
{{- end -}}

{{/* The container's image. */}}
{{- define "tidal.image" -}}
{{- if include "tidal.caImage" . -}}
{{- printf "%s:%s" (include "tidal.defaultRepository" .) .Chart.AppVersion -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* "true" when objects take Cluster Autoscaler's chart's names
(<release>-<cloudProvider>-cluster-autoscaler): clusterAutoscalerNames, or
when it is null, values that name Cluster Autoscaler's image (a values
file of Cluster Autoscaler's chart). */}}
{{- define "tidal.caNames" -}}
{{- $set := .Values.clusterAutoscalerNames -}}
{{- if kindIs "invalid" $set -}}{{- include "tidal.caImage" . -}}{{- else if $set -}}true{{- end -}}
{{- end -}}

{{/* The chart's name, nameOverride (as Cluster Autoscaler's chart): with
its names, <cloudProvider>-cluster-autoscaler. */}}
{{- define "tidal.name" -}}
{{- $chart := .Chart.Name -}}
{{- if include "tidal.caNames" . }}{{ $chart = printf "%s-cluster-autoscaler" .Values.cloudProvider }}{{ end -}}
{{- default $chart .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride; else the release's name when it
holds the chart's name (with Cluster Autoscaler's names: when it is the
name, as its chart does); else release-name. */}}
{{- define "tidal.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "tidal.name" . -}}
{{- $same := contains $name .Release.Name -}}
{{- if include "tidal.caNames" . }}{{ $same = eq $name .Release.Name }}{{ end -}}
{{- if $same -}}
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
{{- if and $v.cloudConfigPath (ne $v.cloudProvider "externalgrpc") -}}
{{- fail (printf "tidal: cloudConfigPath %s: tidal reads a cloud config file only with cloudProvider externalgrpc (the server's address and TLS files, docs/externalgrpc.md); on %s it takes its settings from flags and the SDK's environment (AWS_REGION, AWS_ENDPOINT_URL_*, IRSA): leave cloudConfigPath out" $v.cloudConfigPath $v.cloudProvider) -}}
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
{{- with .Values.cloudConfigPath }}
- --cloud-config={{ . }}
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

{{/* Cluster Autoscaler's chart's defaults that are not empty or are
false, of the values tidal's chart does not have: a value equal to its
default was not set (an empty one neither). */}}
{{- define "tidal.caDefaults" -}}
azureVMType: vmss
clusterAPIMode: incluster-incluster
clusterAPIWorkloadKubeconfigPath: /etc/kubernetes/value
clusterAPICloudConfigPath: /etc/kubernetes/mgmt-kubeconfig
magnumCABundlePath: /etc/kubernetes/ca-bundle.crt
kwokConfigMapName: kwok-provider-config
envFromConfigMapOptional: true
azureUseManagedIdentityExtension: false
azureUseWorkloadIdentityExtension: false
azureEnableForceDelete: false
vpa: {enabled: false, updateMode: Auto, containerPolicy: {}}
rbac: {clusterScoped: true, pspEnabled: false}
autoDiscovery: {roles: [worker]}
{{- end -}}

{{/* The values set that the chart does not use, as "a, b.c, ": keys its
values.yaml lacks whose value is neither empty nor Cluster Autoscaler's
default, looking into the values that hold named fields. Arguments: values,
known (the chart's defaults at that level), ca (Cluster Autoscaler's),
prefix. */}}
{{- define "tidal.unusedIn" -}}
{{- $known := .known -}}
{{- $ca := .ca -}}
{{- $prefix := .prefix -}}
{{- $structured := list "image" "rbac" "rbac.serviceAccount" "autoDiscovery" "service" "serviceMonitor" "prometheusRule" "podDisruptionBudget" "deployment" "podLoop" "priorityExpander" -}}
{{- range $key, $value := .values -}}
{{- $path := printf "%s%s" $prefix $key -}}
{{- if not (hasKey $known $key) -}}
{{- if hasKey $ca $key -}}
{{- if ne (toJson $value) (toJson (get $ca $key)) }}{{ $path }}, {{ end -}}
{{- else if not (empty $value) }}{{ $path }}, {{ end -}}
{{- else if and (has $path $structured) (kindIs "map" $value) (kindIs "map" (get $known $key)) -}}
{{- $caIn := get $ca $key -}}
{{- if not (kindIs "map" $caIn) }}{{ $caIn = dict }}{{ end -}}
{{- include "tidal.unusedIn" (dict "values" $value "known" (get $known $key) "ca" $caIn "prefix" (printf "%s." $path)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The values set that the chart does not use, as a list, with a hint
where one of tidal's values takes the place. */}}
{{- define "tidal.unused" -}}
{{- $known := .Files.Get "files/values.yaml" | fromYaml -}}
{{- /* Used, though values.yaml leaves it out (maxUnavailable is set). */ -}}
{{- $_ := set $known.podDisruptionBudget "minAvailable" "" -}}
{{- $ca := include "tidal.caDefaults" . | fromYaml -}}
{{- $hints := dict "serviceAccount" "serviceAccount (now rbac.serviceAccount)" -}}
{{- $out := list -}}
{{- range splitList ", " (include "tidal.unusedIn" (dict "values" .Values "known" $known "ca" $ca "prefix" "")) -}}
{{- if . }}{{ $out = append $out (get $hints . | default .) }}{{ end -}}
{{- end -}}
{{- join ", " $out -}}
{{- end -}}
