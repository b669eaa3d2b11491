package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KarmadaQuotaInstallation is karmada-quota installed on one Karmada: the webhook and the controller in this
// namespace of the host cluster, and karmada-quota's API objects in the Karmada's karmada-apiserver. The operator
// makes the installation match the spec, keeps it so (what it owns in both planes is watched and repaired),
// upgrades it in an order that never leaves binding writes failing, and on deletion unregisters the webhook from
// the karmada-apiserver before anything else goes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=kqi,categories=karmada-io
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KarmadaQuotaInstallation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KarmadaQuotaInstallationSpec `json:"spec"`
	// +optional
	Status KarmadaQuotaInstallationStatus `json:"status,omitempty"`
}

// KarmadaQuotaInstallationSpec is the installation wanted.
type KarmadaQuotaInstallationSpec struct {
	// Karmada is the Karmada to install into.
	Karmada KarmadaTarget `json:"karmada"`

	// Version of karmada-quota to run: the tag of its images. Empty: the operator's own version.
	// +optional
	// +kubebuilder:validation:Pattern=`^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`
	Version string `json:"version,omitempty"`

	// Images says where the images come from.
	// +optional
	Images Images `json:"images,omitempty"`

	// Webhook is the admission webhook: every ResourceBinding write in the Karmada waits on it.
	// +optional
	Webhook Webhook `json:"webhook,omitempty"`

	// Controller counts usage into quota status, settles reservations and requeues waiting bindings.
	// +optional
	Controller Controller `json:"controller,omitempty"`

	// Certificates of the webhook.
	// +optional
	Certificates Certificates `json:"certificates,omitempty"`

	// Monitoring says which Prometheus Operator and Grafana objects to create.
	// +optional
	Monitoring Monitoring `json:"monitoring,omitempty"`

	// BusinessRoles says what the karmada-apiserver's stock view, edit and admin roles may read.
	// +optional
	BusinessRoles BusinessRoles `json:"businessRoles,omitempty"`

	// Suspend stops the operator from changing the installation: no upgrade, no repair. Deleting the
	// installation still uninstalls it.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Uninstall says what deleting the installation removes beyond what it made.
	// +optional
	Uninstall Uninstall `json:"uninstall,omitempty"`
}

// KarmadaTarget locates the Karmada.
type KarmadaTarget struct {
	// KubeconfigSecretRef is a Secret in this namespace with an admin kubeconfig of the karmada-apiserver, its CA
	// inline. karmada-operator writes "<instance>-admin-config" (key "karmada.config"); Karmada's Helm chart
	// writes "<release>-kubeconfig" (key "kubeconfig").
	KubeconfigSecretRef SecretKeyReference `json:"kubeconfigSecretRef"`

	// Namespace, in the karmada-apiserver, of karmada-quota's service accounts and of the controller's Lease.
	// +optional
	// +kubebuilder:default=karmada-system
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`

	// LeastPrivilegeIdentities runs the webhook and the controller as their own service accounts in the
	// karmada-apiserver, with only the rights they need, rather than with the admin kubeconfig.
	// +optional
	// +kubebuilder:default=true
	LeastPrivilegeIdentities *bool `json:"leastPrivilegeIdentities,omitempty"`
}

// SecretKeyReference names a key of a Secret in the installation's namespace.
type SecretKeyReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +optional
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key,omitempty"`
}

// Images says where karmada-quota's images come from.
type Images struct {
	// Registry and path prefix: images are <registry>/quota-webhook:<version> and <registry>/quota-controller:<version>.
	// +optional
	Registry string `json:"registry,omitempty"`
	// PullPolicy of every container.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
	// PullSecrets in this namespace, to pull the images with.
	// +optional
	// +listType=atomic
	PullSecrets []corev1.LocalObjectReference `json:"pullSecrets,omitempty"`
}

// Component is how one component's pods run.
type Component struct {
	// Image overrides the component's whole image reference, version included.
	// +optional
	Image string `json:"image,omitempty"`
	// Replicas of the component.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`
	// Resources of the component's container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector of the component's pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the component's pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the component's pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints added to the default spread of the pods over nodes.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of the component's pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ExtraArgs are more command-line arguments for the component (`quota-webhook --help`, `quota-controller --help`).
	// +optional
	// +listType=atomic
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// Webhook configures the admission webhook.
type Webhook struct {
	Component `json:",inline"`
	// ReservationTTL is how long a reservation outlives a binding write that never happened; above the
	// karmada-apiserver's 60s request timeout.
	// +optional
	ReservationTTL *metav1.Duration `json:"reservationTTL,omitempty"`
	// DecisionTimeout bounds the decision of one batch of a namespace's binding writes; below TimeoutSeconds.
	// +optional
	DecisionTimeout *metav1.Duration `json:"decisionTimeout,omitempty"`
	// TimeoutSeconds is how long the karmada-apiserver waits for the webhook's answer.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// ExemptKinds are kinds, as Kind.group (Certificate.cert-manager.io), that may run under a quota limiting what
	// pods use although karmada-quota cannot know the pods they make (a CRD no ResourceInterpreterCustomization
	// describes): their Works go through uncharged. Other such kinds are refused there.
	// +optional
	// +listType=set
	ExemptKinds []string `json:"exemptKinds,omitempty"`
}

// Controller configures the quota controller.
type Controller struct {
	Component `json:",inline"`
	// ResyncPeriod is how often every quota is recounted from scratch.
	// +optional
	ResyncPeriod *metav1.Duration `json:"resyncPeriod,omitempty"`
	// Workers is how many quotas are reconciled at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Workers *int32 `json:"workers,omitempty"`
}

// CertificateMode says who issues the webhook's serving certificate.
// +kubebuilder:validation:Enum=SelfManaged;CertManager
type CertificateMode string

const (
	// CertificatesSelfManaged: karmada-quota keeps a CA and the serving certificate in Secrets of this namespace
	// and renews both ahead of expiry.
	CertificatesSelfManaged CertificateMode = "SelfManaged"
	// CertificatesCertManager: a cert-manager Certificate, whose CA karmada-quota copies into the webhook
	// configuration.
	CertificatesCertManager CertificateMode = "CertManager"
)

// Certificates configures the webhook's certificates.
// +kubebuilder:validation:XValidation:rule="!has(self.certManager) || self.mode == 'CertManager'",message="certManager settings need mode CertManager"
// +kubebuilder:validation:XValidation:rule="!has(self.selfManaged) || self.mode == 'SelfManaged'",message="selfManaged settings need mode SelfManaged"
type Certificates struct {
	// Mode is SelfManaged (the default) or CertManager.
	// +optional
	// +kubebuilder:default=SelfManaged
	Mode CertificateMode `json:"mode,omitempty"`
	// SelfManaged lifetimes.
	// +optional
	SelfManaged *SelfManagedCertificates `json:"selfManaged,omitempty"`
	// CertManager settings.
	// +optional
	CertManager *CertManagerCertificates `json:"certManager,omitempty"`
}

// SelfManagedCertificates are the lifetimes of the self-managed CA and serving certificate. Each is renewed once
// a third of its lifetime is left.
type SelfManagedCertificates struct {
	// +optional
	CAValidity *metav1.Duration `json:"caValidity,omitempty"`
	// +optional
	Validity *metav1.Duration `json:"validity,omitempty"`
}

// CertManagerCertificates configures the cert-manager Certificate.
type CertManagerCertificates struct {
	// IssuerRef is the issuer of the serving certificate. Empty: a self-signed CA of the installation's own.
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`
	// Duration of the serving certificate.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore is how long before expiry cert-manager renews it.
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is Issuer (the default) or ClusterIssuer.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer (cert-manager.io by default).
	// +optional
	Group string `json:"group,omitempty"`
}

// Monitoring says which monitoring objects to create.
type Monitoring struct {
	// ServiceMonitor creates Prometheus Operator ServiceMonitors for both components.
	// +optional
	ServiceMonitor MonitoringObject `json:"serviceMonitor,omitempty"`
	// PrometheusRule creates a Prometheus Operator PrometheusRule with karmada-quota's alerts.
	// +optional
	PrometheusRule MonitoringObject `json:"prometheusRule,omitempty"`
	// Dashboards creates a ConfigMap with karmada-quota's Grafana dashboard for the Grafana sidecar.
	// +optional
	Dashboards MonitoringObject `json:"dashboards,omitempty"`
}

// MonitoringObject toggles one monitoring object.
type MonitoringObject struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Labels added to the object, for the Prometheus or Grafana that selects it.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// BusinessRoles configures the read access business teams get.
type BusinessRoles struct {
	// Disabled keeps karmada-quota's read access out of the stock view, edit and admin roles.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// HideResourceBindings keeps read access to ResourceBindings out of those roles (`kubectl karmada quota
	// describe` and `why` read them).
	// +optional
	HideResourceBindings bool `json:"hideResourceBindings,omitempty"`
}

// Uninstall says what deleting the installation removes.
type Uninstall struct {
	// RemoveCRD deletes the KarmadaQuota CRD from the karmada-apiserver, and with it every quota. Off, quotas
	// and their CRD outlive the installation.
	// +optional
	RemoveCRD bool `json:"removeCRD,omitempty"`
}

// KarmadaQuotaInstallationStatus is the installation as the operator last saw it.
type KarmadaQuotaInstallationStatus struct {
	// ObservedGeneration is the generation of the spec the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Version is the version every component runs, once a rollout to it is complete.
	// +optional
	Version string `json:"version,omitempty"`

	// Components is the readiness of each component.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []ComponentStatus `json:"components,omitempty"`

	// Conditions: Ready (the installation serves as specified), Progressing (a rollout or registration is under
	// way), Degraded (something keeps the operator from doing its job; the reason says what).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ComponentStatus is the readiness of one component.
type ComponentStatus struct {
	// Name is webhook or controller.
	Name string `json:"name"`
	// Image the component's pods are meant to run.
	// +optional
	Image string `json:"image,omitempty"`
	// Replicas wanted, updated to the current spec, and ready.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Ready is true when the rollout of the current spec is complete.
	Ready bool `json:"ready"`
}

// Condition types.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
)

// KarmadaQuotaInstallationList is a list of installations.
//
// +kubebuilder:object:root=true
type KarmadaQuotaInstallationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KarmadaQuotaInstallation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KarmadaQuotaInstallation{}, &KarmadaQuotaInstallationList{})
}
