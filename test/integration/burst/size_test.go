package burst

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// The probe is the KarmadaQuotaLedger schema without the bound on reservations, under another name, so that the
// apiserver's own limit can be found: the size of a ledger without the bound.
const (
	probeGroup = "probe.quota.karmada.io"
	probeKind  = "KarmadaQuotaLedgerProbe"
)

var _ = Describe("The size of a quota's ledger", func() {
	It("stays well below what the apiserver stores, with the list at its bound", func() {
		installProbe()
		ns := newNamespace()

		// A reservation as the benchmark's bindings make them, and the largest one the API allows.
		typical := func(i int) quotav1alpha1.Reservation {
			return reservation(fmt.Sprintf("rb-%05d", i), framework.List("cpu", "1", "memory", "128Mi"))
		}
		worst := func(i int) quotav1alpha1.Reservation {
			name := fmt.Sprintf("%s-%05d", strings.Repeat("x", 247), i)
			return reservation(name, framework.List("cpu", "1500m", "requests.memory", "3Gi", "pods", "3", "nvidia.com/gpu", "2",
				"requests.ephemeral-storage", "10Gi", "count/deployments.apps", "1", "hugepages-2Mi", "512Mi", "services", "1"))
		}
		perReservation := func(build func(int) quotav1alpha1.Reservation) int {
			raw, err := json.Marshal(build(1))
			Expect(err).NotTo(HaveOccurred())
			return len(raw) + 1 // and its comma
		}

		// The longest list of typical reservations the apiserver stores in one ledger, by bisection, and what it
		// answers past it.
		stored, refusal := 0, ""
		lo, hi := 1000, 20000
		for lo+1 < hi {
			mid := (lo + hi) / 2
			if err := writeProbe(ns, "typical", mid, typical, 0); err != nil {
				hi, refusal = mid, err.Error()
			} else {
				lo = mid
			}
		}
		stored = lo
		limitBytes := probeSize(ns, "typical")
		Expect(refusal).NotTo(BeEmpty(), "the apiserver stored every length tried")

		// The shipped bound, with the largest reservations and a hundred member clusters besides.
		Expect(writeProbe(ns, "bound", quota.MaxReservations, worst, 100)).To(Succeed())
		boundBytes := probeSize(ns, "bound")
		Expect(boundBytes).To(BeNumerically("<", limitBytes/2),
			"%d reservations of the largest kind (%d bytes) are not well below what the apiserver stores (%d bytes)", quota.MaxReservations, boundBytes, limitBytes)

		AddReportEntry("ledger size", fmt.Sprintf("a reservation: %d bytes of JSON (binding rb-00001, cpu and memory), %d at worst "+
			"(a 253-character name, eight resources); the apiserver stored %d typical reservations in one ledger (%d bytes) and "+
			"refused %d: %s; the bound, %d reservations of the largest kind and a hundred member clusters: %d bytes",
			perReservation(typical), perReservation(worst), stored, limitBytes, stored+1, oneLine(refusal), quota.MaxReservations, boundBytes))
	})
})

func reservation(name string, reserved corev1.ResourceList) quotav1alpha1.Reservation {
	return quotav1alpha1.Reservation{
		ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: name,
			UID: types.UID(fmt.Sprintf("0f8b6c2e-1d4a-4e5b-9c3d-%012d", len(name)))},
		Generation:     12,
		Reserved:       reserved,
		ExpirationTime: metav1.Now(),
	}
}

// installProbe installs the KarmadaQuotaLedger CRD of the chart under the probe's name, without maxItems on
// reservations.
func installProbe() {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy", "charts", "karmada-quota", "files", "crds", "quota.karmada.io_karmadaquotaledgers.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	crd.Name = "karmadaquotaledgerprobes." + probeGroup
	crd.Spec.Group = probeGroup
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "karmadaquotaledgerprobes", Singular: "karmadaquotaledgerprobe", Kind: probeKind, ListKind: probeKind + "List",
	}
	for i := range crd.Spec.Versions {
		schema := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		reservations := schema.Properties["reservations"]
		Expect(reservations.MaxItems).NotTo(BeNil(), "the shipped ledger bounds its reservations")
		reservations.MaxItems = nil
		schema.Properties["reservations"] = reservations
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}})
	Expect(err).NotTo(HaveOccurred())
}

// writeProbe creates or replaces probe name in ns: a ledger with n reservations, and usage observed on as many
// member clusters.
func writeProbe(ns, name string, n int, build func(int) quotav1alpha1.Reservation, clusters int) error {
	GinkgoHelper()
	l := &quotav1alpha1.KarmadaQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration: 7,
			Observed:        &quotav1alpha1.LedgerObserved{Used: framework.List("cpu", "1", "memory", "1Gi")},
		},
	}
	for i := range n {
		l.Reservations = append(l.Reservations, build(i))
	}
	l.ReservationCount = int32(n)
	for i := range clusters {
		l.Observed.Clusters = append(l.Observed.Clusters, quotav1alpha1.ClusterUsed{Name: fmt.Sprintf("member-%03d", i),
			Used: framework.List("cpu", "1500m", "requests.memory", "3Gi", "pods", "3", "nvidia.com/gpu", "2", "requests.ephemeral-storage", "10Gi", "hugepages-2Mi", "512Mi")})
	}
	l.FoldedReservations = &quotav1alpha1.FoldedReservations{Count: 5000, Reserved: framework.List("cpu", "5000"), ExpirationTime: metav1.Now()}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: content}
	obj.SetAPIVersion(probeGroup + "/v1alpha1")
	obj.SetKind(probeKind)

	existing := &unstructured.Unstructured{}
	existing.SetAPIVersion(probeGroup + "/v1alpha1")
	existing.SetKind(probeKind)
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, existing); err != nil {
		return k8s.Create(ctx, obj)
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	return k8s.Update(ctx, obj)
}

// probeSize is the size in bytes of probe name as the apiserver returns it.
func probeSize(ns, name string) int {
	GinkgoHelper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(probeGroup + "/v1alpha1")
	obj.SetKind(probeKind)
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed())
	raw, err := json.Marshal(obj.Object)
	Expect(err).NotTo(HaveOccurred())
	return len(raw)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
