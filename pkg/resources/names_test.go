package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCanonical(t *testing.T) {
	cases := map[string]struct {
		name      corev1.ResourceName
		wantName  corev1.ResourceName
		wantClass Class
		// wantErr is a fragment of the error message: enough to show which rule refused the name.
		wantErr string
	}{
		"bare cpu is its requests form":            {name: "cpu", wantName: "requests.cpu", wantClass: Compute},
		"requests.cpu":                             {name: "requests.cpu", wantName: "requests.cpu", wantClass: Compute},
		"bare memory":                              {name: "memory", wantName: "requests.memory", wantClass: Compute},
		"requests.memory":                          {name: "requests.memory", wantName: "requests.memory", wantClass: Compute},
		"ephemeral-storage":                        {name: "ephemeral-storage", wantName: "requests.ephemeral-storage", wantClass: Compute},
		"requests.ephemeral-storage":               {name: "requests.ephemeral-storage", wantName: "requests.ephemeral-storage", wantClass: Compute},
		"hugepages":                                {name: "hugepages-2Mi", wantName: "requests.hugepages-2Mi", wantClass: Compute},
		"requests.hugepages":                       {name: "requests.hugepages-1Gi", wantName: "requests.hugepages-1Gi", wantClass: Compute},
		"extended resource":                        {name: "nvidia.com/gpu", wantName: "requests.nvidia.com/gpu", wantClass: Compute},
		"requests. extended resource":              {name: "requests.example.com/fpga", wantName: "requests.example.com/fpga", wantClass: Compute},
		"pods":                                     {name: "pods", wantName: "pods", wantClass: Pods},
		"count of a grouped resource":              {name: "count/deployments.apps", wantName: "count/deployments.apps", wantClass: ObjectCount},
		"count of a core resource has no group":    {name: "count/services", wantName: "count/services", wantClass: ObjectCount},
		"count of a CRD":                           {name: "count/flinkdeployments.flink.apache.org", wantName: "count/flinkdeployments.flink.apache.org", wantClass: ObjectCount},
		"count of pods is an object count":         {name: "count/pods", wantName: "count/pods", wantClass: ObjectCount},
		"legacy services":                          {name: "services", wantName: "count/services", wantClass: ObjectCount},
		"legacy secrets":                           {name: "secrets", wantName: "count/secrets", wantClass: ObjectCount},
		"legacy configmaps":                        {name: "configmaps", wantName: "count/configmaps", wantClass: ObjectCount},
		"claims members hold":                      {name: "persistentvolumeclaims", wantName: "persistentvolumeclaims", wantClass: Held},
		"count of claim templates":                 {name: "count/persistentvolumeclaims", wantName: "count/persistentvolumeclaims", wantClass: ObjectCount},
		"legacy replicationcontrollers":            {name: "replicationcontrollers", wantName: "count/replicationcontrollers", wantClass: ObjectCount},
		"legacy resourcequotas":                    {name: "resourcequotas", wantName: "count/resourcequotas", wantClass: ObjectCount},
		"limits.cpu suggests requests.cpu":         {name: "limits.cpu", wantErr: "limits cannot be enforced: a ResourceBinding carries resource requests only; use requests.cpu"},
		"limits.memory suggests requests.memory":   {name: "limits.memory", wantErr: "use requests.memory"},
		"limits of an extended resource":           {name: "limits.nvidia.com/gpu", wantErr: "limits cannot be enforced"},
		"services.loadbalancers":                   {name: "services.loadbalancers", wantName: "services.loadbalancers", wantClass: Held},
		"services.nodeports":                       {name: "services.nodeports", wantName: "services.nodeports", wantClass: Held},
		"requests.storage":                         {name: "requests.storage", wantName: "requests.storage", wantClass: Held},
		"storage class requests.storage":           {name: "gold.storageclass.storage.k8s.io/requests.storage", wantName: "gold.storageclass.storage.k8s.io/requests.storage", wantClass: Held},
		"storage class persistentvolumeclaims":     {name: "gold.storageclass.storage.k8s.io/persistentvolumeclaims", wantName: "gold.storageclass.storage.k8s.io/persistentvolumeclaims", wantClass: Held},
		"storage class of another resource":        {name: "gold.storageclass.storage.k8s.io/requests.cpu", wantErr: "a storage class limits only"},
		"storage class with an invalid name":       {name: "Gold_1.storageclass.storage.k8s.io/requests.storage", wantErr: `storage class "Gold_1" is not a valid StorageClass name`},
		"bare storage is not a container resource": {name: "storage", wantErr: "unknown resource"},
		"count without a resource":                 {name: "count/", wantErr: `resource "" is not a lowercase plural resource name`},
		"count with an uppercase resource":         {name: "count/Deployments.apps", wantErr: `resource "Deployments"`},
		"count with an invalid group":              {name: "count/deployments.Apps", wantErr: `group "Apps" is not a valid API group`},
		"count with an empty group label":          {name: "count/deployments.apps..io", wantErr: `group "apps..io"`},
		"unknown bare name":                        {name: "bogus", wantErr: "unknown resource"},
		"empty name":                               {name: "", wantErr: "unknown resource"},
		"storage is not requested by containers":   {name: "storage", wantErr: "unknown resource"},
		"requests.pods":                            {name: "requests.pods", wantErr: "unknown resource"},
		"requests. twice":                          {name: "requests.requests.cpu", wantErr: "unknown resource"},
		"hugepages without a size":                 {name: "hugepages-", wantErr: "unknown resource"},
		"kubernetes.io is native, not extended":    {name: "kubernetes.io/gpu", wantErr: "unknown resource"},
		"subdomain of kubernetes.io":               {name: "example.kubernetes.io/gpu", wantErr: "unknown resource"},
		"extended name containing requests.":       {name: "example.com/requests.gpu", wantErr: "unknown resource"},
		"extended name with an uppercase domain":   {name: "Example.com/gpu", wantErr: "unknown resource"},
		"extended name without a name after the /": {name: "example.com/", wantErr: "unknown resource"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotName, gotClass, err := Canonical(tc.name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Canonical(%q) error = %v, want one containing %q", tc.name, err, tc.wantErr)
				}
				if gotName != "" || gotClass != 0 {
					t.Errorf("Canonical(%q) = (%q, %v) with an error, want the zero values", tc.name, gotName, gotClass)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonical(%q) unexpected error: %v", tc.name, err)
			}
			if gotName != tc.wantName || gotClass != tc.wantClass {
				t.Errorf("Canonical(%q) = (%q, %v), want (%q, %v)", tc.name, gotName, gotClass, tc.wantName, tc.wantClass)
			}
		})
	}
}

// TestCanonicalIsIdempotent guards the promise that the accounting has a single name per resource: feeding a
// canonical name back must return it unchanged, or a quota written with canonical keys would count elsewhere.
func TestCanonicalIsIdempotent(t *testing.T) {
	for _, name := range []corev1.ResourceName{
		"cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "pods", "services", "secrets",
		"configmaps", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas", "count/jobs.batch",
		"requests.storage", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "services.nodeports",
	} {
		first, firstClass, err := Canonical(name)
		if err != nil {
			t.Fatalf("Canonical(%q): %v", name, err)
		}
		second, secondClass, err := Canonical(first)
		if err != nil {
			t.Fatalf("Canonical(%q) of canonical %q: %v", name, first, err)
		}
		if second != first || secondClass != firstClass {
			t.Errorf("Canonical(%q) = (%q, %v), but Canonical of that = (%q, %v)", name, first, firstClass, second, secondClass)
		}
	}
}

func TestRequestName(t *testing.T) {
	cases := map[string]struct {
		name corev1.ResourceName
		want corev1.ResourceName
	}{
		"cpu":               {name: corev1.ResourceCPU, want: "requests.cpu"},
		"hugepages":         {name: "hugepages-2Mi", want: "requests.hugepages-2Mi"},
		"extended resource": {name: "nvidia.com/gpu", want: "requests.nvidia.com/gpu"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RequestName(tc.name); got != tc.want {
				t.Errorf("RequestName(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}
