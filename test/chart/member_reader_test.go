package chart

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memberReader names the ClusterRole, binding and ClusterPropagationPolicy that let karmada-quota read the members.
const memberReader = "karmada-quota-member-reader"

// What karmada-quota reads in the members, through Karmada's cluster proxy as its own identities: every member's
// nodes always (a DaemonSet is charged one pod per node it fits), its pods while member sampling is on; granted to
// both the webhook's and the controller's identities, and propagated to every member, whatever else is toggled.
func TestMemberReader(t *testing.T) {
	forEachRendering(t, checkMemberReader)
	t.Run("member sampling off", func(t *testing.T) {
		checkMemberReader(t, renderCase(t, valuesCase{name: "member sampling off", release: "karmada-quota", values: map[string]any{
			"controller": map[string]any{"memberSampling": map[string]any{"interval": "0s"}},
		}}))
	})
}

func checkMemberReader(t reporter, r *rendering) {
	named := func(kind string) *unstructured.Unstructured {
		t.Helper()
		var found []*unstructured.Unstructured
		for _, obj := range ofKind(r.Karmada, kind) {
			if obj.GetName() == memberReader {
				found = append(found, obj)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d %s named %s in the karmada-apiserver, want 1", len(found), kind, memberReader)
		}
		return found[0]
	}

	interval, err := time.ParseDuration(r.str("controller.memberSampling.interval"))
	if err != nil {
		t.Fatalf("controller.memberSampling.interval: %v", err)
	}
	want := []string{`"" nodes [list]`}
	if interval != 0 {
		want = append(want, `"" pods [list]`)
	}
	var got []string
	for _, rule := range typed[rbacv1.ClusterRole](t, named("ClusterRole")).Rules {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				got = append(got, fmt.Sprintf("%q %s %v", group, resource, rule.Verbs))
			}
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s grants %v with member sampling every %v, want %v", memberReader, got, interval, want)
	}

	binding := typed[rbacv1.ClusterRoleBinding](t, named("ClusterRoleBinding"))
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != memberReader {
		t.Errorf("ClusterRoleBinding %s binds %s %s", memberReader, binding.RoleRef.Kind, binding.RoleRef.Name)
	}
	var identities, subjects []string
	for _, sa := range ofKind(r.Karmada, "ServiceAccount") {
		identities = append(identities, sa.GetNamespace()+"/"+sa.GetName())
	}
	for _, s := range binding.Subjects {
		subjects = append(subjects, s.Kind+" "+s.Namespace+"/"+s.Name)
	}
	sort.Strings(identities)
	sort.Strings(subjects)
	if len(identities) != 2 {
		t.Errorf("the karmada-apiserver's ServiceAccounts are %v, want the webhook's and the controller's", identities)
	}
	for i := range identities {
		identities[i] = "ServiceAccount " + identities[i]
	}
	if !slices.Equal(subjects, identities) {
		t.Errorf("ClusterRoleBinding %s binds %v, want both components' identities %v", memberReader, subjects, identities)
	}

	policy := named("ClusterPropagationPolicy")
	// Every member, present and future, tainted ones included: nothing narrows the placement, and every taint is
	// tolerated (a member Karmada evicts workloads from runs them until their eviction ends, and is read meanwhile).
	placement, _, _ := unstructured.NestedMap(policy.Object, "spec", "placement")
	tolerateAll := map[string]any{"clusterTolerations": []any{map[string]any{"operator": "Exists"}}}
	if !reflect.DeepEqual(placement, tolerateAll) {
		t.Errorf("ClusterPropagationPolicy %s places on %v, want every member, present and future, tainted or not", memberReader, placement)
	}
	selectors, _, _ := unstructured.NestedSlice(policy.Object, "spec", "resourceSelectors")
	var selected []string
	for _, s := range selectors {
		s := s.(map[string]any)
		selected = append(selected, fmt.Sprint(s["apiVersion"], " ", s["kind"], " ", s["name"]))
	}
	sort.Strings(selected)
	wantSelected := []string{
		"rbac.authorization.k8s.io/v1 ClusterRole " + memberReader,
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding " + memberReader,
	}
	if !slices.Equal(selected, wantSelected) {
		t.Errorf("ClusterPropagationPolicy %s selects %v, want %v", memberReader, selected, wantSelected)
	}
}
