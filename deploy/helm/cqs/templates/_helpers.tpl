{{/* Names and labels shared by every object of the chart. */}}
{{- define "cqs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cqs.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "cqs.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "cqs.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "cqs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cqs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: api
{{- end }}

{{- define "cqs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "cqs.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "cqs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cqs.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "cqs.scheme" -}}
{{- if .Values.secrets.tls.name }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
Settings that hold, or may hold, secrets (cqs/settings.py SECRET_SETTINGS, and the
credentials file): refused as plain values, so that none ends up in a release's values.
*/}}
{{- define "cqs.checkNoPlainSecrets" -}}
{{- range $name := list "receipt_secret" "admin_password" "access_keys" "cassandra_password" "redis_urls" "credentials_file" "tls_cert" "tls_key" }}
{{- if hasKey $.Values.settings $name }}
{{- fail (printf "settings.%s is not a plain value: give it through secrets (values.yaml)" $name) }}
{{- end }}
{{- end }}
{{- range $name := list "host" "port" "data_dir" "cassandra_hosts" "cassandra_keyspace" "cassandra_replication" }}
{{- if hasKey $.Values.settings $name }}
{{- fail (printf "settings.%s is set by the chart: use service.port, redis or cassandra in values.yaml" $name) }}
{{- end }}
{{- end }}
{{- if contains "@" $.Values.redis.urls }}
{{- fail "redis.urls carries a password: put the URLs in a Secret named by secrets.redisUrls" }}
{{- end }}
{{- end }}

{{/* Env entries read from Secrets' keys: a list of (variable, {name, key}), named ones only. */}}
{{- define "cqs.secretEnv" -}}
{{- range $pair := . }}
{{- $ref := index $pair 1 }}
{{- if $ref.name }}
- name: {{ index $pair 0 }}
  valueFrom:
    secretKeyRef: {name: {{ $ref.name }}, key: {{ $ref.key }}}
{{- end }}
{{- end }}
{{- end }}
