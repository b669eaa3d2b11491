package quota

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// This file holds a member cluster to what a quota admitted: what Karmada asks one member to run for a binding
// (a Work's manifest) must not use more, in any resource the quota limits, than the binding was admitted to use
// there.

// Overrun is a resource a member would be asked to run past what a quota admitted for the binding there.
type Overrun struct {
	Resource        corev1.ResourceName
	Asked, Admitted string
}

// Overruns compares asked, what a member is asked to run for one binding, with admitted, what this quota admitted
// for that binding on that member (both this quota's charge on the cluster), resource by resource among those it
// limits. A resource asked no more of than before (what the member was asked to run until now; nil if nothing)
// is never an overrun: like any quota, this one refuses increases, not the state it finds, so an edit that
// changes something else, or lowers the excess, always goes through.
func (l *Ledger) Overruns(asked, admitted, before resources.List) []Overrun {
	var out []Overrun
	for _, name := range asked.Names() {
		if _, limited := l.hard[name]; !limited {
			continue
		}
		v := asked[name]
		if v <= admitted[name] || (before != nil && v <= before[name]) {
			continue
		}
		out = append(out, Overrun{Resource: l.AuthorName(name), Asked: l.format(name, v), Admitted: l.format(name, admitted[name])})
	}
	return out
}

// UnrequestedOverrun names the requests this quota makes mandatory (usage.Usage.MissingRequests) that asked places
// replicas without, when admitted made them: a member asked to run replicas without a CPU request would run them
// unlimited under a CPU quota. Only resources newly missing count, as in Overruns.
func (l *Ledger) UnrequestedOverrun(asked, admitted usage.Usage, before *usage.Usage) []corev1.ResourceName {
	limited := l.hard.Names()
	isMissing := func(u usage.Usage) map[corev1.ResourceName]bool {
		out := map[corev1.ResourceName]bool{}
		for _, name := range u.MissingRequests(l.Selector, limited) {
			out[name] = true
		}
		return out
	}
	wasMissing := isMissing(admitted)
	if before != nil {
		for name := range isMissing(*before) {
			wasMissing[name] = true
		}
	}
	var out []corev1.ResourceName
	for _, name := range asked.MissingRequests(l.Selector, limited) {
		if !wasMissing[name] {
			out = append(out, l.AuthorName(name))
		}
	}
	return out
}

// OverrunMessage renders what a quota found, for a refusal: overruns first, then requests missing.
func OverrunMessage(quota string, overruns []Overrun, unrequested []corev1.ResourceName) string {
	var b strings.Builder
	fmt.Fprintf(&b, "quota %s", quota)
	for _, o := range overruns {
		fmt.Fprintf(&b, ", %s: asked %s, admitted %s", o.Resource, o.Asked, o.Admitted)
	}
	if len(unrequested) > 0 {
		names := make([]string, len(unrequested))
		for i, n := range unrequested {
			names[i] = string(n)
		}
		fmt.Fprintf(&b, ", must specify requests for %s: the quota limits them and the admitted binding made them", strings.Join(names, ","))
	}
	return b.String()
}

// AuthorNames renders canonical names as the quota's author wrote them (AuthorName).
func (l *Ledger) AuthorNames(canonical []corev1.ResourceName) []corev1.ResourceName {
	out := make([]corev1.ResourceName, len(canonical))
	for i, name := range canonical {
		out[i] = l.AuthorName(name)
	}
	return out
}

// LimitsCompute reports whether this quota limits what u's replica sets run: it counts a resource they use (pods,
// a request), or it requires a request they would have to make. A workload whose pods at once have no bound (a
// CronJob allowing concurrent Jobs) cannot be admitted under such a quota, and needs no bound under any other.
func (l *Ledger) LimitsCompute(u usage.Usage) bool {
	if len(l.Limited(u.Charge(l.Selector).Total)) > 0 {
		return true
	}
	return len(u.MissingRequests(l.Selector, l.hard.Names())) > 0
}

// LimitsPods reports whether this quota limits anything pods use: pods, or a compute resource they request. A
// workload whose pods cannot be known (interpreter.Interpreter.Opaque) cannot be admitted under such a quota,
// whatever its scope: the priority class of pods nobody can read is not known either.
func (l *Ledger) LimitsPods() bool {
	for name := range l.hard {
		if _, class, err := resources.Canonical(name); err == nil && (class == resources.Compute || class == resources.Pods) {
			return true
		}
	}
	return false
}
