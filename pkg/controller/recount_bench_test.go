package controller

import (
	"fmt"
	"testing"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// BenchmarkRecount is a full recount of one quota: what every binding of the namespace uses, total and per member
// cluster, whether it waits (quota.Recount), and the status rendered from it (renderStatus). 10,000 bindings over 10 member clusters, placed Divided over three
// clusters each, with cpu, memory, a GPU and object counts limited.
func BenchmarkRecount(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("bindings=%d/clusters=10", n), func(b *testing.B) {
			bindings := make([]workv1alpha2.ResourceBinding, n)
			for i := range bindings {
				w := utiltesting.MakeBinding("team", fmt.Sprintf("app-%05d", i)).
					Requests(corev1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("512Mi"), "nvidia.com/gpu": resource.MustParse("1")})
				for c := 0; c < 3; c++ {
					w.Cluster(fmt.Sprintf("member%d", (i+c)%10), int32(1+c))
				}
				bindings[i] = *w.Obj()
			}
			q := utiltesting.MakeQuota("team", "team").Hard(corev1.ResourceList{
				"cpu": resource.MustParse("100k"), "memory": resource.MustParse("100Ti"), "nvidia.com/gpu": resource.MustParse("100k"),
				"pods": resource.MustParse("1M"), "count/deployments.apps": resource.MustParse("1M"),
			}).Obj()
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ledger, err := quota.NewLedger(q, nil)
				if err != nil {
					b.Fatal(err)
				}
				tally := quota.Recount(ledger, quota.Observation{Bindings: bindings, Now: now})
				status := renderStatus(q, ledger, tally, nil, memberReport{}, memberClusters{}, now)
				if len(status.Clusters) != 10 {
					b.Fatalf("clusters = %d, want 10", len(status.Clusters))
				}
				benchStatus = status
			}
		})
	}
}

var benchStatus *quotav1alpha1.KarmadaQuotaStatus
