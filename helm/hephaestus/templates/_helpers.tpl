{{/*
Names. The fullname is kept to 38 characters so that the longest object name built on it,
"<fullname>-6-sync-datawarehouse" (a Job; pods label it job-name, at most 63) and
"<fullname>-dwh-accuracy" (a CronJob, at most 52), stays valid.
*/}}
{{- define "hephaestus.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 38 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 38 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 38 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hephaestus.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hephaestus.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "hephaestus.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hephaestus
{{- end -}}

{{- define "hephaestus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "hephaestus.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "hephaestus.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* Paths inside the container. */}}
{{- define "hephaestus.projectDir" -}}/etc/hephaestus/project{{- end -}}
{{- define "hephaestus.secretsDir" -}}/etc/hephaestus/secrets{{- end -}}
{{- define "hephaestus.stateDir" -}}/var/lib/hephaestus{{- end -}}

{{/* (list $ path): a path of the image's desired state; relative ones resolve against desiredStateDir. */}}
{{- define "hephaestus.statePath" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- if hasPrefix "/" $path -}}
{{- $path -}}
{{- else -}}
{{- printf "%s/%s" (trimSuffix "/" $root.Values.desiredStateDir) $path -}}
{{- end -}}
{{- end -}}

{{/*
(list "what" ref): the file a {name, key} Secret reference is mounted as, or "" when the
reference is empty. Half a reference is an error, not a silently missing secret.
*/}}
{{- define "hephaestus.secretFile" -}}
{{- $what := index . 0 -}}
{{- $ref := index . 1 | default dict -}}
{{- if or $ref.name $ref.key -}}
{{- if not (and $ref.name $ref.key) -}}
{{- fail (printf "%s: name both the existing Secret and its key ({name: ..., key: ...})" $what) -}}
{{- end -}}
{{- printf "%s/%s/%s" (include "hephaestus.secretsDir" dict) $ref.name $ref.key -}}
{{- end -}}
{{- end -}}

{{/* Every existing Secret mounted as files, as a JSON list of names (sorted, unique). */}}
{{- define "hephaestus.secretFileNames" -}}
{{- $names := dict -}}
{{- range $name, $c := .Values.clusters -}}
{{- if $c -}}
{{- range $ref := list $c.passwordSecret $c.caSecret -}}
{{- if and $ref $ref.name -}}{{- $_ := set $names $ref.name true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name, $k := .Values.ksqldb -}}
{{- if $k -}}
{{- range $ref := list $k.passwordSecret $k.caSecret -}}
{{- if and $ref $ref.name -}}{{- $_ := set $names $ref.name true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $name, $d := .Values.databases -}}
{{- if and $d $d.passwordSecret $d.passwordSecret.name -}}{{- $_ := set $names $d.passwordSecret.name true -}}{{- end -}}
{{- end -}}
{{- with .Values.slack.webhookSecret -}}
{{- if .name -}}{{- $_ := set $names .name true -}}{{- end -}}
{{- end -}}
{{- keys $names | sortAlpha | toJson -}}
{{- end -}}

{{/* The environment variable a database's DSN Secret is passed in. */}}
{{- define "hephaestus.dsnEnv" -}}
{{- printf "HEPHAESTUS_DSN_%s" (. | upper | replace "-" "_") -}}
{{- end -}}

{{/* (list $ warehouse): names of the clusters with that `warehouse` flag, as a JSON list. */}}
{{- define "hephaestus.clusterNames" -}}
{{- $root := index . 0 -}}
{{- $want := index . 1 -}}
{{- $names := list -}}
{{- range $name, $c := $root.Values.clusters -}}
{{- if and $c (eq (default false $c.warehouse) $want) -}}{{- $names = append $names $name -}}{{- end -}}
{{- end -}}
{{- $names | toJson -}}
{{- end -}}

{{/* The deployment's hephaestus.yaml (see hephaestus/project.schema.json). */}}
{{/*
The deployment's state database: state.database, else (the keys of earlier releases)
lock.database, else heal.state.database, else "". When there is one, the lock, the ownership
record, the audit trail and heal's restart records go to its PostgreSQL (hephaestus.yaml
`state: {database}`); without one they are files under stateDir, which must then be a claim
(state.existingClaim) or be declared throwaway (state.ephemeral: true).
*/}}
{{- define "hephaestus.stateDatabase" -}}
{{- $db := .Values.state.database | default (.Values.lock | default dict).database | default ((((.Values.heal | default dict).state) | default dict).database) | default "" -}}
{{- if and (not $db) (not .Values.state.existingClaim) (not .Values.state.ephemeral) -}}
{{- fail "state: the audit trail and heal's restart budget would sit on an emptyDir and reset with every pod. Keep them in PostgreSQL (state.database: one of databases), on a claim (state.existingClaim), or accept that with state.ephemeral: true" -}}
{{- end -}}
{{- $db -}}
{{- end -}}

{{- define "hephaestus.projectFile" -}}
{{- $root := . -}}
{{- $defaultSelect := list (printf "%s_%s_*" .Values.global.environment .Values.global.vendor) -}}
{{- $clusters := dict -}}
{{- range $name, $c := .Values.clusters -}}
{{- if $c -}}
{{- $out := dict "url" $c.url "connectors" (include "hephaestus.statePath" (list $root $c.connectors)) -}}
{{- $_ := set $out "select" (ternary $defaultSelect $c.select (kindIs "invalid" $c.select)) -}}
{{- $_ := set $out "helm_values" (merge (dict) ($c.helmValues | default dict) (dict "environment" $root.Values.global.environment "vendor" $root.Values.global.vendor)) -}}
{{- with $c.kafkaBootstrap -}}{{- $_ := set $out "kafka_bootstrap" . -}}{{- end -}}
{{- with $c.schemaRegistryUrl -}}{{- $_ := set $out "schema_registry_url" . -}}{{- end -}}
{{- with $c.username -}}{{- $_ := set $out "username" . -}}{{- end -}}
{{- with include "hephaestus.secretFile" (list (printf "clusters.%s.passwordSecret" $name) $c.passwordSecret) -}}
{{- $_ := set $out "password" (dict "file" .) -}}
{{- end -}}
{{- with include "hephaestus.secretFile" (list (printf "clusters.%s.caSecret" $name) $c.caSecret) -}}
{{- $_ := set $out "ca_file" . -}}
{{- end -}}
{{- if and (hasKey $c "verifyTls") (eq $c.verifyTls false) -}}{{- $_ := set $out "verify_tls" false -}}{{- end -}}
{{- with $c.timeoutSeconds -}}{{- $_ := set $out "timeout_s" . -}}{{- end -}}
{{- $_ := set $clusters $name $out -}}
{{- end -}}
{{- end -}}
{{- $databases := dict -}}
{{- range $name, $d := .Values.databases -}}
{{- if $d -}}
{{- $out := dict -}}
{{- with $d.dsn -}}
{{- if regexMatch "(?i)password\\s*=" . -}}
{{- fail (printf "databases.%s.dsn holds a password: put the DSN in a Secret (dsnSecret) or the password (passwordSecret)" $name) -}}
{{- end -}}
{{- $_ := set $out "dsn" . -}}
{{- end -}}
{{- if and $d.dsnSecret (or $d.dsnSecret.name $d.dsnSecret.key) -}}
{{- if not (and $d.dsnSecret.name $d.dsnSecret.key) -}}
{{- fail (printf "databases.%s.dsnSecret: name both the existing Secret and its key" $name) -}}
{{- end -}}
{{- $_ := set $out "dsn_env" (include "hephaestus.dsnEnv" $name) -}}
{{- end -}}
{{- with include "hephaestus.secretFile" (list (printf "databases.%s.passwordSecret" $name) $d.passwordSecret) -}}
{{- $_ := set $out "password" (dict "file" .) -}}
{{- end -}}
{{- $_ := set $databases $name $out -}}
{{- end -}}
{{- end -}}
{{- $stateDb := include "hephaestus.stateDatabase" . -}}
{{- $project := dict "clusters" $clusters -}}
{{- if $stateDb -}}
{{- $_ := set $project "state" (dict "database" $stateDb) -}}
{{- else -}}
{{- $_ := set $project "audit_log" (printf "%s/audit.jsonl" (include "hephaestus.stateDir" .)) -}}
{{- end -}}
{{- $_ := set $project "name" (.Values.projectName | default (printf "%s.%s" .Release.Namespace .Release.Name)) -}}
{{- if $databases -}}{{- $_ := set $project "databases" $databases -}}{{- end -}}
{{- with .Values.policy -}}{{- $_ := set $project "policy" . -}}{{- end -}}
{{- with omit (.Values.lock | default dict) "database" -}}{{- $_ := set $project "lock" . -}}{{- end -}}
{{- with include "hephaestus.secretFile" (list "slack.webhookSecret" .Values.slack.webhookSecret) -}}
{{- $_ := set $project "slack" (dict "webhook_file" .) -}}
{{- end -}}
{{- $heal := deepCopy (.Values.heal | default dict) -}}
{{- if and $heal.state $heal.state.database -}}
{{- $_ := unset $heal "state" -}}
{{- end -}}
{{- if and (not $heal.state) (not $stateDb) -}}
{{- $_ := set $heal "state" (dict "file" (printf "%s/heal-state.json" (include "hephaestus.stateDir" .))) -}}
{{- end -}}
{{- $_ := set $project "heal" $heal -}}
{{- $ksql := dict -}}
{{- range $name, $k := .Values.ksqldb -}}
{{- if $k -}}
{{- $out := dict "url" $k.url "migrations" (include "hephaestus.statePath" (list $root ($k.migrations | default (printf "ksql_migrations/%s" $name)))) -}}
{{- range $from, $to := dict "username" "username" "stream" "stream" "table" "table" "streamTopic" "stream_topic" "tableTopic" "table_topic" "timeoutSeconds" "timeout_s" -}}
{{- with index $k $from -}}{{- $_ := set $out $to . -}}{{- end -}}
{{- end -}}
{{- with include "hephaestus.secretFile" (list (printf "ksqldb.%s.passwordSecret" $name) $k.passwordSecret) -}}
{{- $_ := set $out "password" (dict "file" .) -}}
{{- end -}}
{{- with include "hephaestus.secretFile" (list (printf "ksqldb.%s.caSecret" $name) $k.caSecret) -}}
{{- $_ := set $out "ca_file" . -}}
{{- end -}}
{{- if and (hasKey $k "verifyTls") (eq $k.verifyTls false) -}}{{- $_ := set $out "verify_tls" false -}}{{- end -}}
{{- $_ := set $ksql $name $out -}}
{{- end -}}
{{- end -}}
{{- if $ksql -}}{{- $_ := set $project "ksqldb" $ksql -}}{{- end -}}
{{- /* projectExtra may add keys, never replace the ones built above */ -}}
{{- $project = merge $project (deepCopy .Values.projectExtra) -}}
{{- toYaml $project -}}
{{- end -}}

{{/*
The spec of one hephaestus Job (a hook Job, or a CronJob's jobTemplate). Called with
(dict "root" $ "component" C "job" NAME "args" LIST "backoffLimit" N "activeDeadlineSeconds" N).
*/}}
{{- define "hephaestus.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "hephaestus.selectorLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/project: {{ include "hephaestus.projectFile" $root | sha256sum }}
    {{- with $v.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  restartPolicy: {{ .restartPolicy }}
  serviceAccountName: {{ include "hephaestus.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  containers:
    - name: hephaestus
      image: {{ include "hephaestus.image" $root | quote }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      workingDir: {{ $v.desiredStateDir }}
      command: [hephaestus]
      args:
        {{- toYaml .argv | nindent 8 }}
      {{- with .port }}
      ports:
        - name: metrics
          containerPort: {{ . }}
      readinessProbe:
        httpGet: {path: /metrics, port: metrics}
      {{- end }}
      env:
        - name: HEPHAESTUS_PROJECT
          value: {{ printf "%s/hephaestus.yaml" (include "hephaestus.projectDir" $root) }}
        - name: HOME
          value: /tmp
        {{- with $v.metrics.pushgateway }}
        - name: HEPHAESTUS_PUSHGATEWAY
          value: {{ . | quote }}
        {{- end }}
        {{- range $name, $d := $v.databases }}
        {{- if and $d $d.dsnSecret $d.dsnSecret.name }}
        - name: {{ include "hephaestus.dsnEnv" $name }}
          valueFrom:
            secretKeyRef:
              name: {{ $d.dsnSecret.name }}
              key: {{ $d.dsnSecret.key }}
        {{- end }}
        {{- end }}
        {{- with $v.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      resources:
        {{- toYaml $v.resources | nindent 8 }}
      securityContext:
        {{- toYaml $v.securityContext | nindent 8 }}
      volumeMounts:
        - name: project
          mountPath: {{ include "hephaestus.projectDir" $root }}
          readOnly: true
        - name: state
          mountPath: {{ include "hephaestus.stateDir" $root }}
        - name: tmp
          mountPath: /tmp
        {{- range $secret := include "hephaestus.secretFileNames" $root | fromJsonArray }}
        - name: {{ printf "secret-%s" ($secret | sha256sum | trunc 10) }}
          mountPath: {{ printf "%s/%s" (include "hephaestus.secretsDir" $root) $secret }}
          readOnly: true
        {{- end }}
  volumes:
    - name: project
      configMap:
        name: {{ include "hephaestus.fullname" $root }}
    - name: state
      {{- if $v.state.existingClaim }}
      persistentVolumeClaim:
        claimName: {{ $v.state.existingClaim }}
      {{- else }}
      emptyDir: {}
      {{- end }}
    - name: tmp
      emptyDir: {}
    {{- range $secret := include "hephaestus.secretFileNames" $root | fromJsonArray }}
    - name: {{ printf "secret-%s" ($secret | sha256sum | trunc 10) }}
      secret:
        secretName: {{ $secret }}
        defaultMode: 0440
    {{- end }}
  {{- with $v.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{- define "hephaestus.jobSpec" -}}
backoffLimit: {{ .backoffLimit }}
activeDeadlineSeconds: {{ .activeDeadlineSeconds }}
template:
  {{- include "hephaestus.podTemplate" (dict "root" .root "component" .component "restartPolicy" "Never"
        "argv" (concat (list "job" "run" .job) .args)) | nindent 2 }}
{{- end -}}
