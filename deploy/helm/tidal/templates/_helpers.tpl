{{/* Labels on every object. */}}
{{- define "tidal.labels" -}}
app.kubernetes.io/name: tidal
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The pods' selector. */}}
{{- define "tidal.selector" -}}
app.kubernetes.io/name: tidal
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* tidal's flags from the values. */}}
{{- define "tidal.args" -}}
- --cloud-provider={{ .Values.cloudProvider }}
- --address=:{{ .Values.port }}
- --namespace={{ .Release.Namespace }}
{{- range .Values.nodes }}
- --nodes={{ . }}
{{- end }}
{{- with .Values.autoDiscovery.clusterName }}
- --node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/{{ . }}
{{- end }}
{{- range .Values.autoDiscovery.specs }}
- --node-group-auto-discovery={{ . }}
{{- end }}
{{- with .Values.awsRegion }}
- --aws-region={{ . }}
{{- end }}
- --expander={{ .Values.expander }}
- --provision-ahead={{ .Values.provisionAhead }}
- --hpa={{ .Values.podLoop.enabled }}
- --hpa-objects={{ .Values.podLoop.hpaObjects }}
{{- with .Values.podLoop.prometheusURL }}
- --prometheus-url={{ . }}
{{- end }}
{{- range $flag, $value := .Values.extraArgs }}
- --{{ $flag }}={{ $value }}
{{- end }}
{{- end -}}
