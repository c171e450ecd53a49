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

{{/* imageRef: registry/repository@digest, or registry/repository:tag
without a digest, of an image value (dict with registry, repository, tag,
digest); an empty registry or tag comes from .Values.image.registry and the
chart's appVersion. A digest names the content alone, so an upgrade that
keeps an image's content keeps the pods that run it. Call with
(dict "image" VALUE "root" $). */}}
{{- define "webfarm-operator.imageRef" -}}
{{- $registry := .image.registry | default .root.Values.image.registry | trimSuffix "/" -}}
{{- $ref := .image.repository -}}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $ref .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (.image.tag | default .root.Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{- /* The chart's labels and monitoring.labels (which cannot replace them):
the labels a Prometheus selects monitoring objects by. */ -}}
{{- define "webfarm-operator.monitoringLabels" -}}
{{- include "webfarm-operator.labels" . }}
{{- $own := include "webfarm-operator.labels" . | fromYaml }}
{{- range $name, $value := .Values.monitoring.labels }}
{{- if not (hasKey $own $name) }}
{{ $name }}: {{ $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- /* A monitor's namespaceSelector: the one given, else the namespaces the
operator serves (watchNamespaces), else any. */ -}}
{{- define "webfarm-operator.farmNamespaces" -}}
{{- if .selector }}
{{- toYaml .selector }}
{{- else if .root.Values.watchNamespaces }}
matchNames:
{{- toYaml .root.Values.watchNamespaces | nindent 0 }}
{{- else }}
any: true
{{- end }}
{{- end -}}
