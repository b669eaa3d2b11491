package quotaio

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// sameMap reports whether a and b are one map, not two maps alike.
func sameMap(a, b corev1.ResourceList) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

var managed = []metav1.ManagedFieldsEntry{{Manager: "karmada-quota-controller", Operation: metav1.ManagedFieldsOperationUpdate}}

// TestTrimQuotaSharesTheHardLimitsSpecAndStatusHoldAlike: a status whose hard limits are the spec's holds the
// spec's list, a status that differs in any quantity or format keeps its own, and a deep copy shares nothing.
func TestTrimQuotaSharesTheHardLimitsSpecAndStatusHoldAlike(t *testing.T) {
	cases := map[string]struct {
		spec, status corev1.ResourceList
		shared       bool
	}{
		"alike":                             {spec: list("cpu", "20", "memory", "40Gi"), status: list("cpu", "20", "memory", "40Gi"), shared: true},
		"alike, spelled otherwise":          {spec: list("cpu", "20"), status: list("cpu", "20000m"), shared: true},
		"a limit changed since the status":  {spec: list("cpu", "20", "memory", "40Gi"), status: list("cpu", "10", "memory", "40Gi")},
		"a resource added since":            {spec: list("cpu", "20", "pods", "10"), status: list("cpu", "20")},
		"a resource removed since":          {spec: list("cpu", "20"), status: list("cpu", "20", "pods", "10")},
		"another resource":                  {spec: list("cpu", "20"), status: list("memory", "20")},
		"the same amount in another format": {spec: list("memory", "1Gi"), status: list("memory", "1073741824")},
		"no status yet":                     {spec: list("cpu", "20")},
		"no limits":                         {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &quotav1alpha1.KarmadaQuota{
				ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "team", ManagedFields: managed},
				Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: tc.spec},
				Status:     quotav1alpha1.KarmadaQuotaStatus{Hard: tc.status, Used: list("cpu", "1")},
			}
			want := q.DeepCopy()
			want.ManagedFields = nil
			got, err := TrimQuota(q)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := got.(*quotav1alpha1.KarmadaQuota)
			// Shared or not, every reader reads what was decoded.
			if diff := cmp.Diff(want, trimmed); diff != "" {
				t.Errorf("trimmed quota (-want +got):\n%s", diff)
			}
			if shared := len(tc.spec) > 0 && sameMap(trimmed.Spec.Hard, trimmed.Status.Hard); shared != tc.shared {
				t.Errorf("status.hard is spec.hard: %v, want %v", shared, tc.shared)
			}
			copied := trimmed.DeepCopy()
			if len(tc.spec) > 0 && sameMap(copied.Spec.Hard, copied.Status.Hard) {
				t.Error("a deep copy of a trimmed quota shares its lists: changing its status would change its spec")
			}
		})
	}
}

// TestTrimQuotaBusiness: a business quota's status shares its spec's hard limits too.
func TestTrimQuotaBusiness(t *testing.T) {
	hard := list("cpu", "100")
	b := &quotav1alpha1.KarmadaBusinessQuota{ObjectMeta: metav1.ObjectMeta{Name: "business", ManagedFields: managed}}
	b.Spec.Hard = hard
	b.Status.Hard = list("cpu", "100")
	got, err := TrimQuota(b)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := got.(*quotav1alpha1.KarmadaBusinessQuota)
	if !sameMap(trimmed.Spec.Hard, trimmed.Status.Hard) {
		t.Error("the business quota's status.hard is a list of its own")
	}
	if trimmed.ManagedFields != nil {
		t.Error("the business quota kept its managed fields")
	}
}

// TestTrimQuotaOthers: anything but a quota loses its managed fields only; what is not an object comes back as it
// came.
func TestTrimQuotaOthers(t *testing.T) {
	ledger := &quotav1alpha1.KarmadaQuotaLedger{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "team", ManagedFields: managed}}
	got, err := TrimQuota(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if got != ledger || ledger.ManagedFields != nil {
		t.Errorf("TrimQuota(ledger) = %v with managed fields %v; want the ledger without them", got, ledger.ManagedFields)
	}
	if got, err := TrimQuota("not an object"); err != nil || got != "not an object" {
		t.Errorf("TrimQuota(a string) = %v, %v; want it back", got, err)
	}
}
