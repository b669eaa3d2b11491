package quotaio

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func newClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
}

// TestBusinessQuotaSelectsByLabels: the namespaces a business quota selects are those its selector matches now; a
// namespace the informer does not know yet is read from the apiserver, and without an apiserver reader it is
// selected by none.
func TestBusinessQuotaSelectsByLabels(t *testing.T) {
	list := utiltesting.List
	informer := newClient(
		utiltesting.BusinessQuota("shop", list("cpu", "2")),
		utiltesting.BusinessQuota("bank", list("cpu", "2")),
		utiltesting.Namespace("shop-dev", map[string]string{"business": "shop"}),
		utiltesting.Namespace("plain", map[string]string{"team": "x"}),
	)
	api := newClient(utiltesting.Namespace("shop-new", map[string]string{"business": "shop"}))
	for name, tc := range map[string]struct {
		selection *BusinessSelection
		want      map[string][]string
	}{
		"with the apiserver": {NewBusinessSelection(informer, api), map[string][]string{
			"shop-dev": {"shop"}, "plain": nil, "shop-new": {"shop"}, "gone": nil}},
		"informer only": {NewBusinessSelection(informer, nil), map[string][]string{"shop-dev": {"shop"}, "shop-new": nil}},
	} {
		for ns, want := range tc.want {
			got, err := tc.selection.Selecting(context.Background(), ns)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, q := range got {
				names = append(names, q.Name)
			}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("%s, %s: business quotas (-want +got):\n%s", name, ns, diff)
			}
		}
	}
}
