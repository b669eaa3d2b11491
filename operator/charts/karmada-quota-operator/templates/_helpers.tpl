{{- define "karmada-quota-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: karmada-quota-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "karmada-quota-operator.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "karmada-quota-operator.selectorLabels" -}}
app.kubernetes.io/name: karmada-quota-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "karmada-quota-operator.tag" -}}
{{- .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- end -}}
