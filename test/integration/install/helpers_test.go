package install

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

const (
	// release is the Helm release (and the operator's installation) name: the objects are named karmada-quota-*.
	release = "karmada-quota"
	crdName = "karmadaquotas.quota.karmada.io"
	// ledgerCRDName is the CRD of the quotas' ledgers, installed beside crdName.
	ledgerCRDName = "karmadaquotaledgers.quota.karmada.io"
	partOf        = "app.kubernetes.io/part-of"
	instance      = "app.kubernetes.io/instance"
)

// newHostNamespace is a fresh release namespace in the host. envtest runs no namespace controller, so it is not
// deleted afterwards: a namespace that never finishes terminating would only get in the way.
func newHostNamespace(prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(hostPlane.client.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// renderChart renders the chart for the release in a host namespace, as `helm install` would.
func renderChart(namespace string, values map[string]any) *render.Installation {
	GinkgoHelper()
	in, err := render.Render(release, namespace, values)
	Expect(err).NotTo(HaveOccurred())
	return in
}

// observation is what an Installer reported applying, and whether every CRD applied before it (karmada-quota's
// CRDs: quotas and their ledgers) was established at that moment.
type observation struct {
	InKarmada      bool
	Kind, Name     string
	Change         install.Change
	CRDEstablished bool
}

// observations collects an Installer's reports.
type observations struct {
	mu   sync.Mutex
	list []observation
}

func (o *observations) take() []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.list
	o.list = nil
	return out
}

// newInstaller builds the install phases for a rendering, connected as the chart's Jobs connect: the
// karmada-apiserver through the admin kubeconfig, the host as an admin.
func newInstaller(in *render.Installation) (*install.Installer, *observations) {
	GinkgoHelper()
	access, err := install.KarmadaFromKubeconfig(karmadaPlane.adminKubeconfig)
	Expect(err).NotTo(HaveOccurred())
	certificates, err := install.CertificatesFor(in.Config, hostPlane.client, access.Client)
	Expect(err).NotTo(HaveOccurred())
	seen := &observations{}
	installer := &install.Installer{
		Host: hostPlane.client, Karmada: access.Client, KarmadaCluster: access.Cluster,
		Config: in.Config, Objects: in.Karmada, Certificates: certificates, Log: GinkgoLogr,
	}
	var appliedCRDs []string
	installer.Observe = func(inKarmada bool, obj *unstructured.Unstructured, change install.Change) {
		o := observation{InKarmada: inKarmada, Kind: obj.GetKind(), Name: obj.GetName(), Change: change, CRDEstablished: true}
		for _, name := range appliedCRDs {
			var crd apiextensionsv1.CustomResourceDefinition
			established := false
			if err := karmadaPlane.client.Get(ctx, client.ObjectKey{Name: name}, &crd); err == nil {
				for _, c := range crd.Status.Conditions {
					established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
				}
			}
			o.CRDEstablished = o.CRDEstablished && established
		}
		if inKarmada && obj.GetKind() == "CustomResourceDefinition" {
			appliedCRDs = append(appliedCRDs, obj.GetName())
		}
		seen.mu.Lock()
		seen.list = append(seen.list, o)
		seen.mu.Unlock()
	}
	return installer, seen
}

// applyHostObjects installs the chart's host objects as Helm does (its Deployments, Services, ...).
func applyHostObjects(in *render.Installation) {
	GinkgoHelper()
	for _, obj := range in.Host {
		obj = obj.DeepCopy()
		Expect(hostPlane.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("helm"), client.ForceOwnership)).
			To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
}

// cleanKarmadaPlaneAfterwards removes, when the spec ends, whatever an installation left in the karmada-apiserver
// (the CRD included), so that the next spec installs into a karmada-apiserver that never saw karmada-quota.
func cleanKarmadaPlaneAfterwards() {
	DeferCleanup(func() {
		c := karmadaPlane.client
		owned := client.MatchingLabels{partOf: "karmada-quota"}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookconfig.ConfigurationName}}
		Expect(removeFinalizersAndDelete(c, vwc)).To(Succeed())
		for _, list := range []client.ObjectList{
			&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
			&corev1.ServiceAccountList{}, &corev1.SecretList{},
		} {
			Expect(c.List(ctx, list, owned)).To(Succeed())
			items, err := metaItems(list)
			Expect(err).NotTo(HaveOccurred())
			for _, obj := range items {
				Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed())
			}
		}
		// Every CRD of karmada-quota's group, whatever the release installed.
		var crds apiextensionsv1.CustomResourceDefinitionList
		Expect(c.List(ctx, &crds)).To(Succeed())
		objects := []client.Object{vwc}
		var live []*apiextensionsv1.CustomResourceDefinition
		for i := range crds.Items {
			crd := &crds.Items[i]
			if crd.Spec.Group != quotav1alpha1.GroupVersion.Group {
				continue
			}
			objects = append(objects, crd)
			if crd.DeletionTimestamp == nil { // else the spec deleted it (uninstall.removeCRD): its objects are no longer served
				live = append(live, crd)
			}
		}
		// A CRD deleted while the apiserver's cache of its objects is still initializing, seconds after it was created,
		// stays Terminating for minutes (install.WaitObjectsServed, which the installer's own deletes wait for too);
		// the caches initialize together, so the later waits are short.
		for _, crd := range live {
			objects := schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.ListKind}
			Expect(install.WaitObjectsServed(ctx, c, objects, 30*time.Second)).To(Succeed(), "the cache of %s's objects", crd.Name)
		}
		for _, crd := range live {
			Expect(client.IgnoreNotFound(c.Delete(ctx, crd))).To(Succeed())
		}
		// The apiserver's CRD finalizer deletes a CRD's objects, then polls every 5 s, for up to a minute, until its
		// list of them is empty.
		Eventually(func() []string {
			return remaining(c, objects...)
		}).WithTimeout(90*time.Second).WithPolling(100*time.Millisecond).Should(BeEmpty(), "left in the karmada-apiserver")
	})
}

// remaining describes each of the objects still in the apiserver: its kind and name, whether it is being deleted,
// its finalizers and who wrote it last, so that a cleanup that times out says what held it.
func remaining(c client.Client, objects ...client.Object) []string {
	var out []string
	for _, obj := range objects {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			out = append(out, fmt.Sprintf("%T %s: %v", obj, obj.GetName(), err))
			continue
		}
		var writers []string
		for _, f := range obj.GetManagedFields() {
			writers = append(writers, fmt.Sprintf("%s %s at %s", f.Manager, f.Operation, f.Time))
		}
		var conditions []string
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			for _, c := range crd.Status.Conditions {
				conditions = append(conditions, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
			}
		}
		out = append(out, fmt.Sprintf("%T %s: resourceVersion %s, deletionTimestamp %v, finalizers %v, conditions %v, written by %v",
			obj, obj.GetName(), obj.GetResourceVersion(), obj.GetDeletionTimestamp(), obj.GetFinalizers(), conditions, writers))
	}
	return out
}

func removeFinalizersAndDelete(c client.Client, obj client.Object) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		if err := c.Update(ctx, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return client.IgnoreNotFound(c.Delete(ctx, obj))
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	objects, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objects))
	for _, o := range objects {
		out = append(out, o.(client.Object))
	}
	return out, nil
}

// getKarmada reads an object the chart renders for the karmada-apiserver as it is there now.
func getKarmada(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	return got, karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(obj), got)
}

// kubeconfigClient is a clientset acting as whoever a kubeconfig names.
func kubeconfigClient(kubeconfig []byte) kubernetes.Interface {
	GinkgoHelper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	typed, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return typed
}

// hostSecret reads a Secret of the host.
func hostSecret(namespace, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	return &s, hostPlane.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
}

// haveLabels matches an object carrying every one of the labels.
func haveLabels(labels map[string]string) OmegaMatcher {
	var keys []OmegaMatcher
	for k, v := range labels {
		keys = append(keys, HaveKeyWithValue(k, v))
	}
	return WithTransform(func(obj client.Object) map[string]string { return obj.GetLabels() }, And(keys...))
}

// writeTemp writes a file in the spec's temporary folder and returns its path.
func writeTemp(name string, content []byte) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), name)
	Expect(os.WriteFile(path, content, 0o600)).To(Succeed())
	return path
}

// selfSignedCA is a CA certificate in PEM, as cert-manager's ca.crt would hold.
func selfSignedCA() []byte {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
