{{- define "vectorpilot.name" -}}vectorpilot{{- end -}}

{{- define "vectorpilot.fullname" -}}
{{- if contains "vectorpilot" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-vectorpilot" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "vectorpilot.labels" -}}
app.kubernetes.io/name: vectorpilot
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "vectorpilot.selectorLabels" -}}
app.kubernetes.io/name: vectorpilot
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "vectorpilot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "vectorpilot.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}
