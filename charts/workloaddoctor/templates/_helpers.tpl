{{- define "workloaddoctor.name" -}}{{ .Release.Name }}-workloaddoctor{{- end -}}

{{- define "workloaddoctor.labels" -}}
app.kubernetes.io/name: workloaddoctor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: auditor
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "workloaddoctor.selector" -}}
app.kubernetes.io/name: workloaddoctor
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "workloaddoctor.subject" -}}
- kind: ServiceAccount
  name: {{ include "workloaddoctor.name" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
