{{/*
Label matchers for the rules (rules/hephaestus.yaml): "" or `a="b",c="d",` (a trailing comma,
so they go first inside braces before any matcher of the rule's own).
*/}}
{{- define "hephaestus.monitoring.matchers" -}}
{{- $m := . | default "" | trim | trimSuffix "," -}}
{{- if $m -}}{{- printf "%s," $m -}}{{- end -}}
{{- end -}}

{{/*
The exporter's series of this release: monitoring.prometheusRule.selector, else with the
chart's ServiceMonitor the job (the Service's name) and namespace it scrapes them as, else "".
*/}}
{{- define "hephaestus.monitoring.selector" -}}
{{- $m := .Values.monitoring -}}
{{- if $m.prometheusRule.selector -}}
{{- include "hephaestus.monitoring.matchers" $m.prometheusRule.selector -}}
{{- else if $m.serviceMonitor.enabled -}}
{{- printf "job=%q,namespace=%q," (include "hephaestus.exporterName" .) .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "hephaestus.exporterName" -}}
{{- printf "%s-exporter" (include "hephaestus.fullname" .) -}}
{{- end -}}
