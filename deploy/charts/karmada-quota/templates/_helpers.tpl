{{/*
Name of the installation's objects: the release name when it already says karmada-quota, else
<release>-karmada-quota, cut to 52 characters so that suffixed names ("-webhook-kubeconfig") stay valid.
*/}}
{{- define "karmada-quota.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else if contains "karmada-quota" .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-karmada-quota" .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object of the installation carries. */}}
{{- define "karmada-quota.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: karmada-quota
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "karmada-quota.imageTag" . | quote }}
app.kubernetes.io/part-of: karmada-quota
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels that select one component's pods: include "karmada-quota.selectorLabels" (list . "webhook") */}}
{{- define "karmada-quota.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: karmada-quota
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The tag of karmada-quota's images: image.tag, else "v" + appVersion. */}}
{{- define "karmada-quota.imageTag" -}}
{{- .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- end -}}

{{/* Namespace of the installation in the host cluster. */}}
{{- define "karmada-quota.namespace" -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/*
Labels of the objects the install jobs (or the operator) create rather than Helm: in the karmada-apiserver, and
the Secrets made at run time. Helm does not track them; cleanup finds them by these labels.
*/}}
{{- define "karmada-quota.installedLabels" -}}
app.kubernetes.io/name: karmada-quota
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "karmada-quota.imageTag" . | quote }}
app.kubernetes.io/part-of: karmada-quota
app.kubernetes.io/managed-by: karmada-quota-installer
{{- end -}}

{{/* Image of a component: include "karmada-quota.image" (list . "quota-webhook") */}}
{{- define "karmada-quota.image" -}}
{{- $root := index . 0 -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $root.Values.image.registry) (index . 1) (include "karmada-quota.imageTag" $root) -}}
{{- end -}}

{{/* The webhook's Service, and the names the karmada-apiserver and the certificate know it by. */}}
{{- define "karmada-quota.webhookService" -}}
{{- printf "%s-webhook" (include "karmada-quota.fullname" .) -}}
{{- end -}}

{{- define "karmada-quota.webhookURL" -}}
{{- printf "https://%s.%s.svc:443" (include "karmada-quota.webhookService" .) (include "karmada-quota.namespace" .) -}}
{{- end -}}

{{- define "karmada-quota.servingSecret" -}}
{{- printf "%s-webhook-cert" (include "karmada-quota.fullname" .) -}}
{{- end -}}

{{- define "karmada-quota.caSecret" -}}
{{- printf "%s-ca" (include "karmada-quota.fullname" .) -}}
{{- end -}}

{{/*
The Secret and key a component reads its karmada-apiserver kubeconfig from: its own identity's, or the admin
kubeconfig when least-privilege identities are off. include "karmada-quota.kubeconfigSecret" (list . "webhook")
*/}}
{{- define "karmada-quota.kubeconfigSecretName" -}}
{{- $root := index . 0 -}}
{{- if $root.Values.karmada.leastPrivilegeIdentities -}}
{{- printf "%s-%s-kubeconfig" (include "karmada-quota.fullname" $root) (index . 1) -}}
{{- else -}}
{{- $root.Values.karmada.kubeconfigSecret.name -}}
{{- end -}}
{{- end -}}

{{- define "karmada-quota.kubeconfigSecretKey" -}}
{{- if .Values.karmada.leastPrivilegeIdentities -}}
kubeconfig
{{- else -}}
{{- .Values.karmada.kubeconfigSecret.key -}}
{{- end -}}
{{- end -}}

{{/* The service account of a component in the karmada-apiserver: its RBAC is generated from the code for it. */}}
{{- define "karmada-quota.karmadaServiceAccount" -}}
{{- printf "karmada-quota-%s" . -}}
{{- end -}}

{{/* Pod scheduling: include "karmada-quota.scheduling" (list . .Values.webhook "webhook") */}}
{{- define "karmada-quota.scheduling" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- with $component.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $component.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $component.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if or $component.spreadAcrossNodes $component.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- if $component.spreadAcrossNodes }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "karmada-quota.selectorLabels" (list $root (index . 2)) | nindent 8 }}
  {{- end }}
  {{- with $component.topologySpreadConstraints }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- with $component.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
