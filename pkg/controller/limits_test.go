package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// TestDeletedBindingsOutliveEveryReservation: a binding deleted right after an admission with the longest TTL the
// webhook accepts is remembered until that reservation has expired, and forgotten after.
func TestDeletedBindingsOutliveEveryReservation(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	deleted := deletedBindings(clk.Now)
	admitted := t0
	expires := admitted.Add(quota.MaxReservationTTL)
	deleted.add("web")

	clk.SetTime(expires)
	deleted.add("other") // adds prune what is past
	if !deleted.has("web") {
		t.Fatalf("the deleted binding was forgotten at %s, when its reservation expires", clk.Now().Sub(t0))
	}
	clk.SetTime(expires.Add(2 * time.Minute))
	deleted.add("later")
	if deleted.has(types.UID("web")) {
		t.Errorf("the deleted binding is still remembered %s after every reservation of it expired", clk.Now().Sub(expires))
	}
}
