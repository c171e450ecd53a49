{{- define "webfarm-operator.name" -}}webfarm-operator{{- end -}}

{{- define "webfarm-operator.labels" -}}
app.kubernetes.io/name: webfarm-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "webfarm-operator.selectorLabels" -}}
app.kubernetes.io/name: webfarm-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "webfarm-operator.xdsService" -}}{{ .Release.Name }}-xds{{- end -}}
