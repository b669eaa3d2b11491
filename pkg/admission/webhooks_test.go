package admission

import (
	"testing"

	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// TestCacheReadsByKindJSONWhole: the webhook's cache options narrow none of the types kindjson's informers read
// whole (kindjson.ReadWhole refuses them otherwise, and the webhook would not start).
func TestCacheReadsByKindJSONWhole(t *testing.T) {
	opts, err := CacheOptions(kindjson.Clients{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.NewInformer == nil {
		t.Fatal("CacheOptions builds no informer on kindjson's serializer")
	}
}
