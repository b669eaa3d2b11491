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
