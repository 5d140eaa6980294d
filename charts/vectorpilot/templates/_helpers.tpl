{{- define "vectorpilot.name" -}}{{ default "vectorpilot" .Values.nameOverride | trunc 63 | trimSuffix "-" }}{{- end -}}

{{- define "vectorpilot.fullname" -}}
{{- if .Values.fullnameOverride -}}{{ .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else -}}{{- $name := include "vectorpilot.name" . -}}
{{- if contains $name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vectorpilot.labels" -}}
app.kubernetes.io/name: {{ include "vectorpilot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "vectorpilot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vectorpilot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "vectorpilot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "vectorpilot.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}
