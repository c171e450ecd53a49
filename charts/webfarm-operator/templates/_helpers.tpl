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
