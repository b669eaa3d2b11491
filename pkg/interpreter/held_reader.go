package interpreter

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/templates"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// HeldCacheSize is how many template versions a reader of NewHeldReader remembers: 500-750 bytes each with the
// cache's own bookkeeping (measured), so about 20 MB at most, the priority classes' budget.
const HeldCacheSize = 30_000

// NewHeldReader returns a reader of what bindings' templates hold on members (HeldBy), for the kinds that hold
// anything, reading through c (the apiserver: no informer over every Service of the federation) and remembering
// size template versions. A binding does not carry what its object holds; the webhook and the recount read it here.
func NewHeldReader(c client.Reader, size int) *templates.Reader[usage.Held] {
	kinds := make(map[schema.GroupKind]string, len(holders))
	for gvk := range holders {
		kinds[gvk.GroupKind()] = gvk.Version
	}
	return templates.NewReader(c, size, kinds, "claims, storage and load balancers", HeldBy)
}
