{{/* Chart name, possibly overridden. */}}
{{- define "agp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every object name: fullnameOverride, else the release name. */}}
{{- define "agp.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "agp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Standard labels; call with (dict "ctx" $ "component" "controller"). */}}
{{- define "agp.labels" -}}
helm.sh/chart: {{ include "agp.chart" .ctx }}
{{ include "agp.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: atomic-gang-provisioner
{{- end -}}

{{- define "agp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agp.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "agp.controller.name" -}}{{ include "agp.fullname" . }}-controller{{- end -}}
{{- define "agp.webhook.name" -}}{{ include "agp.fullname" . }}-webhook{{- end -}}
{{- define "agp.config.name" -}}{{ include "agp.fullname" . }}-settings{{- end -}}

{{- define "agp.controller.serviceAccount" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "agp.controller.name" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create=false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "agp.webhook.serviceAccount" -}}
{{- default (include "agp.webhook.name" .) .Values.webhook.serviceAccount.name -}}
{{- end -}}

{{/* The Secret holding the webhook's serving pair (tls.crt, tls.key; ca.crt in certManager/helm modes). */}}
{{- define "agp.webhook.tlsSecret" -}}
{{- if eq .Values.webhook.certMode "provided" -}}
{{- .Values.webhook.provided.secretName -}}
{{- else -}}
{{- include "agp.webhook.name" . }}-tls
{{- end -}}
{{- end -}}

{{/* DNS names of the webhook Service, for the serving certificate. */}}
{{- define "agp.webhook.dnsNames" -}}
{{- $svc := include "agp.webhook.name" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson -}}
{{- end -}}

{{/* Host of webhook.devUrl without the port ("" when unset). */}}
{{- define "agp.webhook.devHost" -}}
{{- if .Values.webhook.devUrl -}}
{{- $host := (urlParse .Values.webhook.devUrl).host -}}
{{- regexReplaceAll "^\\[?([^\\]]*?)\\]?(:[0-9]+)?$" $host "${1}" -}}
{{- end -}}
{{- end -}}

{{- define "agp.webhook.devHostIsIP" -}}
{{- $h := include "agp.webhook.devHost" . -}}
{{- if or (regexMatch "^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $h) (contains ":" $h) -}}true{{- end -}}
{{- end -}}

{{/* image reference: (dict "repository" r "tag" t "digest" d) */}}
{{- define "agp.imageRef" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}
{{- end -}}

{{- define "agp.controller.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- include "agp.imageRef" (dict "repository" .Values.image.repository "tag" $tag "digest" .Values.image.digest) -}}
{{- end -}}

{{- define "agp.webhook.image" -}}
{{- $w := .Values.webhook.image -}}
{{- $repo := default (printf "%s-webhook" .Values.image.repository) $w.repository -}}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) $w.tag -}}
{{- include "agp.imageRef" (dict "repository" $repo "tag" $tag "digest" $w.digest) -}}
{{- end -}}

{{/* The settings file: exactly the keys of atomic_gang.settings.GangSettings. */}}
{{- define "agp.settings" -}}
{{- $v := .Values -}}
{{- $le := deepCopy $v.leaderElection -}}
{{- $_ := set $le "namespace" (include "agp.leaseNamespace" .) -}}
{{- $s := dict
  "clusterName" $v.clusterName
  "controllerName" $v.controllerName
  "integrationMode" $v.integrationMode
  "defaults" $v.defaults
  "limits" $v.limits
  "allowedInstanceTypes" $v.allowedInstanceTypes
  "allowedNodeRoleArns" $v.allowedNodeRoleArns
  "allowedAmiIds" $v.allowedAmiIds
  "allowedSubnets" $v.allowedSubnets
  "allowedCapacityReservationIds" $v.allowedCapacityReservationIds
  "allowedPlacementGroups" $v.allowedPlacementGroups
  "namespaceAllowlists" $v.namespaceAllowlists
  "poolNamespaces" $v.poolNamespaces
  "manageJobsWithoutQueueName" $v.manageJobsWithoutQueueName
  "requireOnePodPerNode" $v.requireOnePodPerNode
  "kueueUsername" $v.kueueUsername
  "jobSetUsername" $v.jobSetUsername
  "trainerUsername" $v.trainerUsername
  "reapIntervalSeconds" $v.reapIntervalSeconds
  "joinDeadlineSeconds" $v.joinDeadlineSeconds
  "acquireAttemptsBeforeRetry" $v.acquireAttemptsBeforeRetry
  "maxConcurrentPoolReconciles" $v.maxConcurrentPoolReconciles
  "healthGraceSeconds" $v.healthGraceSeconds
  "ownerWaitSeconds" $v.ownerWaitSeconds
  "acquireRetry" $v.acquireRetry
  "ec2Api" $v.ec2Api
  "leaderElection" $le
  "iam" $v.iam
  "capacityBlock" $v.capacityBlock
  "nodeHealth" $v.nodeHealth
  "repair" $v.repair
-}}
{{- toYaml $s -}}
{{- end -}}

{{- define "agp.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}

{{/* Every node role the chart knows of: defaults.nodeRoleArn plus allowedNodeRoleArns. */}}
{{- define "agp.nodeRoles" -}}
{{- $roles := list -}}
{{- if .Values.defaults.nodeRoleArn }}{{ $roles = append $roles .Values.defaults.nodeRoleArn }}{{ end -}}
{{- range .Values.allowedNodeRoleArns }}{{ $roles = append $roles . }}{{ end -}}
{{- $roles | uniq | toJson -}}
{{- end -}}

{{/* atomic-gang-instance-profile-<cluster>-<role-name>, hash-truncated at 128 (cloud/naming.py). */}}
{{- define "agp.instanceProfileName" -}}
{{- $role := last (splitList "/" .role) -}}
{{- $full := printf "atomic-gang-instance-profile-%s-%s" .cluster $role -}}
{{- if le (len $full) 128 -}}
{{- $full -}}
{{- else -}}
{{- printf "%s-%s" (trunc 119 $full) (trunc 8 (sha256sum $full)) -}}
{{- end -}}
{{- end -}}

{{- define "agp.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{- define "agp.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext -}}
{{- end -}}

{{/* Default anti-affinity: prefer one replica per node. */}}
{{- define "agp.affinity" -}}
{{- if .affinity -}}
{{- toYaml .affinity -}}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "agp.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 12 }}
{{- end -}}
{{- end -}}

{{/* An alert's runbook annotations: the docs anchor, and a URL when runbookBaseUrl is set.
     Call with (dict "ctx" $ "alert" "AlertName"). */}}
{{- define "agp.alert.runbook" -}}
runbook: {{ printf "docs/operations.md#%s" (lower .alert) }}
{{- with .ctx.Values.metrics.prometheusRule.runbookBaseUrl }}
runbook_url: {{ printf "%s#%s" (trimSuffix "#" .) (lower $.alert) }}
{{- end }}
{{- end -}}
