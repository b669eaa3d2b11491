{{/*
karmada-quota's objects in the karmada-apiserver. Helm only reaches the host cluster, so they are rendered into
the install ConfigMap, and the install jobs (or the operator) apply them: the CRD and the components' roles as
controller-gen generates them from the code, the components' service accounts and bindings, and the roles that
give business teams read access through the stock view, edit and admin roles.
*/}}
{{- define "karmada-quota.karmadaObjects" -}}
{{- $ns := .Values.karmada.namespace -}}
{{- $labels := include "karmada-quota.installedLabels" . -}}
{{- range $path, $_ := .Files.Glob "files/crds/*.yaml" }}
{{- range $doc := splitList "\n---" ($.Files.Get $path) }}
{{- $obj := fromYaml $doc }}
{{- if $obj.kind }}
{{- $_ := set $obj.metadata "labels" (fromYaml $labels) }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}
{{- range $component := list "webhook" "controller" }}
{{- range $doc := splitList "\n---" ($.Files.Get (printf "files/rbac/%s/role.yaml" $component)) }}
{{- $obj := fromYaml $doc }}
{{- if $obj.kind }}
{{- $_ := set $obj.metadata "labels" (fromYaml $labels) }}
{{- if $obj.metadata.namespace }}
{{- /* The components' Roles: generated for karmada-system, moved with the configured namespace. */}}
{{- $_ := set $obj.metadata "namespace" $ns }}
{{- end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- $sa := include "karmada-quota.karmadaServiceAccount" $component }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $sa }}
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $sa }}
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $sa }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
{{- /* Both have a Role in the karmada namespace: the controller's Lease and estimator Services, the webhook's
reads of the members' estimator Services. */}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $sa }}
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $sa }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
{{- end }}
{{- if .Values.karmada.leastPrivilegeIdentities }}
{{- $writers := list }}
{{- range $component := list "webhook" "controller" }}
{{- $writers = append $writers (printf "system:serviceaccount:%s:%s" $ns (include "karmada-quota.karmadaServiceAccount" $component)) }}
{{- end }}
---
# Only karmada-quota's own identities write a quota's status and its ledger, whatever RBAC grants: either edited by
# anyone else could free quota (drop reservations, lower used); and a team's view of its business quota, which would
# tell it wrong. Enforced by the karmada-apiserver itself (CEL), so
# admission of the webhook's own reservation writes costs nothing. (Deleting a ledger is left to the garbage
# collector and admins: the controller writes it again from a recount, and the reservations it listed are lost,
# as they would be to an admin editing status.) With leastPrivilegeIdentities off the components run with the
# admin kubeconfig, cannot be told apart from an admin, and this policy is not installed.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: karmada-quota-status-writers
  labels:
    {{- $labels | nindent 4 }}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [quota.karmada.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [karmadaquotas/status, karmadabusinessquotas/status]
      - apiGroups: [quota.karmada.io]
        apiVersions: ["*"]
        operations: [CREATE, UPDATE]
        resources: [karmadaquotaledgers, karmadabusinessquotaledgers, appliedbusinessquotas]
  validations:
    - expression: {{ printf "request.userInfo.username in %s" (toJson $writers) | quote }}
      messageExpression: >-
        "only karmada-quota's service accounts write the status of a KarmadaQuota or a KarmadaBusinessQuota, their
        ledgers, and the AppliedBusinessQuotas teams read (usage is recounted from the ResourceBindings,
        reservations are settled by its controller), not " + request.userInfo.username
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: karmada-quota-status-writers
  labels:
    {{- $labels | nindent 4 }}
spec:
  policyName: karmada-quota-status-writers
  validationActions: [Deny]
{{- end }}
---
# What karmada-quota reads in every member cluster. Both components read the members through Karmada's cluster
# proxy as their own identity (which takes clusters/proxy get in the karmada-apiserver), and Karmada impersonates
# that identity in the member: the member's own RBAC must grant it what it reads there. Installed whatever the
# business roles: it is karmada-quota's own access, not theirs.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: karmada-quota-member-reader
  labels:
    {{- $labels | nindent 4 }}
rules:
  # Always: the quota charges a DaemonSet one pod per node it fits in each member, so the webhook (admission) and
  # the controller (usage) list the members' nodes, whether member sampling is on or not.
  - apiGroups: [""]
    resources: [nodes]
    verbs: [list]
{{- if not (has (toString .Values.controller.memberSampling.interval) (list "0" "0s")) }}
  # Only while member sampling is on (controller.memberSampling.interval): the controller lists the members' pods
  # to show what they run next to what each quota charges there.
  - apiGroups: [""]
    resources: [pods]
    verbs: [list]
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: karmada-quota-member-reader
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: karmada-quota-member-reader
subjects:
{{- range $component := list "webhook" "controller" }}
  - kind: ServiceAccount
    name: {{ include "karmada-quota.karmadaServiceAccount" $component }}
    namespace: {{ $ns }}
{{- end }}
---
# Both to every member cluster, present and future: they are resource templates in the karmada-apiserver (where
# they grant nothing karmada-quota uses), and Karmada keeps a copy in each member, the one that counts.
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: karmada-quota-member-reader
  labels:
    {{- $labels | nindent 4 }}
spec:
  resourceSelectors:
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      name: karmada-quota-member-reader
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRoleBinding
      name: karmada-quota-member-reader
  # On every member, tainted ones included: a member Karmada evicts workloads from (a NoExecute taint, a failover)
  # still runs them until their graceful eviction ends, and its pods and nodes must be read meanwhile.
  placement:
    clusterTolerations:
      - operator: Exists
{{- if .Values.businessRoles.enabled }}
---
# Read access to quotas for everyone bound to view, edit or admin in a namespace. As for a ResourceQuota, nobody
# gets write access this way: quotas are set by cluster admins, and their status is karmada-quota's.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: karmada-quota-view
  labels:
    {{- $labels | nindent 4 }}
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  # The ledgers list the reservations one by one (`kubectl karmada quota describe`). A business quota is read
  # through its AppliedBusinessQuota in each of its namespaces: the business quota itself, and its ledger, name the
  # business's other namespaces and what they use, and stay with cluster admins.
  - apiGroups: [quota.karmada.io]
    resources: [karmadaquotas, karmadaquotas/status, karmadaquotaledgers, appliedbusinessquotas]
    verbs: [get, list, watch]
{{- if .Values.businessRoles.readResourceBindings }}
---
# What `kubectl karmada quota describe` and `why` read to show which workloads wait for quota.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: karmada-quota-view-resourcebindings
  labels:
    {{- $labels | nindent 4 }}
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
  - apiGroups: [work.karmada.io]
    resources: [resourcebindings, resourcebindings/status]
    verbs: [get, list, watch]
{{- end }}
{{- end }}
{{- end -}}

{{/* What the install phases need besides the objects (operator/pkg/install.Config). */}}
{{- define "karmada-quota.installConfig" -}}
{{- $fullname := include "karmada-quota.fullname" . -}}
namespace: {{ include "karmada-quota.namespace" . }}
labels:
  {{- include "karmada-quota.installedLabels" . | nindent 2 }}
karmada:
  namespace: {{ .Values.karmada.namespace }}
webhook:
  deployment: {{ $fullname }}-webhook
  url: {{ include "karmada-quota.webhookURL" . }}
  timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
controller:
  deployment: {{ $fullname }}-controller
{{- if .Values.karmada.leastPrivilegeIdentities }}
identities:
  {{- range $component := list "webhook" "controller" }}
  - serviceAccount: {{ include "karmada-quota.karmadaServiceAccount" $component }}
    kubeconfigSecret: {{ include "karmada-quota.kubeconfigSecretName" (list $ $component) }}
  {{- end }}
{{- end }}
certificates:
  mode: {{ .Values.certificates.mode }}
  servingSecret: {{ include "karmada-quota.servingSecret" . }}
  {{- if eq .Values.certificates.mode "self-managed" }}
  caSecret: {{ include "karmada-quota.caSecret" . }}
  dnsNames:
    {{- include "karmada-quota.webhookDNSNames" . | nindent 4 }}
  caValidity: {{ .Values.certificates.selfManaged.caValidity }}
  validity: {{ .Values.certificates.selfManaged.validity }}
  {{- end }}
uninstall:
  removeCRD: {{ .Values.uninstall.removeCRD }}
{{- end -}}

{{/* The names the webhook's serving certificate carries. */}}
{{- define "karmada-quota.webhookDNSNames" -}}
{{- $svc := include "karmada-quota.webhookService" . -}}
{{- $ns := include "karmada-quota.namespace" . -}}
- {{ $svc }}.{{ $ns }}.svc
- {{ $svc }}.{{ $ns }}.svc.{{ .Values.clusterDomain }}
{{- end -}}
