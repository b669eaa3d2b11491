package report

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	karmadaevents "github.com/karmada-io/karmada/pkg/events"
	"github.com/karmada-io/karmada/pkg/util/names"
	corev1 "k8s.io/api/core/v1"
)

// A scheduled binding's Works can still be refused: a Work asking a member to run more than its binding places
// there (an OverridePolicy raising requests on one member, a DaemonSet's pod per node, a CronJob's Jobs) is
// admitted against the quotas of the namespace by the Work webhook, or refused with a 403 (pkg/admission,
// workRefused). Karmada's binding controller (ResourceBindingController.syncBinding, karmada v1.18) then records
// what it got as events on the binding, and retries:
//
//   - a Warning SyncWorkFailed whose message is the error of ensureWork: every member's failure, joined by
//     utilerrors.NewAggregate (one alone as it is; several as "[a, b]"), each the apiserver's relay of the
//     webhook's refusal, `admission webhook "work.quota.karmada.io" denied the request: Work
//     karmada-es-<member>/<name> would have member cluster <member> run more than quota allows for ResourceBinding
//     <ns>/<name>: ...`;
//   - a Normal SyncWorkSucceed once every Work was written.
//
// So the newest refusal event tells the current state of the last failed sync (each sync tries every member), and
// a success recorded after it says the refusal is over.

// Events are what the plugin read of a binding's events, for Explain.
type Events struct {
	// Items are the binding's events, in any order.
	Items []corev1.Event
	// Unknown says why they could not be read (no right to list events); empty when they were.
	Unknown string
}

// refusalMarker is in every message of the Work webhook's refusal, whatever wraps it.
const refusalMarker = "would have member cluster"

// workTail ends the webhook's refusal message (workRefused in pkg/admission), but for renderedWith, which names
// the override policies Karmada rendered the Work with: what follows belongs to another error Karmada joined to it.
const workTail = "OverridePolicy or the Work asks"

// renderedWith follows workTail when Karmada applied override policies to the Work: " (Karmada rendered it for
// <execution namespace> with OverridePolicy a, ClusterOverridePolicy b)". Policy names have no parenthesis.
var renderedWith = regexp.MustCompile(`^ \(Karmada rendered it for \S+ with ([^)]*)\)`)

// refusalStart finds where each member's refusal starts in an event's message: the Work (its execution namespace
// and name) and the member cluster.
var refusalStart = regexp.MustCompile(`Work ([^\s/]+)/(\S+) would have member cluster (\S+) run more than quota allows for `)

var (
	// exceededQuota starts a quota's denial (Denial.Error): "exceeded quota: NAME" for a namespace's quota,
	// "exceeded business quota: NAME" for a business quota (group 1 says which, group 2 is the name).
	exceededQuota  = regexp.MustCompile(`exceeded (business )?quota: ([^\s,;]+)`)
	unboundedQuota = regexp.MustCompile(`quota ([^\s,;]+) limits what it runs: `)
	overrunQuota   = regexp.MustCompile(`(?:: |; )quota ([^\s,;]+), `)
)

// worksRefused reads from a binding's events whether quota refuses its Works now: the newest SyncWorkFailed event
// carrying the webhook's refusal, unless Karmada recorded a successful sync (SyncWorkSucceed) since. On a tie of
// timestamps (events have whole seconds) the success wins: a refusal that lasts is recorded again on the next
// retry. kind is the workload's kind, for the advice.
func worksRefused(events []corev1.Event, kind string) *WorksRefused {
	var refusal *corev1.Event
	var synced time.Time
	for i := range events {
		e := &events[i]
		switch {
		case e.Reason == karmadaevents.EventReasonSyncWorkSucceed:
			if t := lastSeen(e); t.After(synced) {
				synced = t
			}
		case e.Reason == karmadaevents.EventReasonSyncWorkFailed && e.Type != corev1.EventTypeNormal &&
			strings.Contains(e.Message, refusalMarker):
			if refusal == nil || newer(e, refusal) {
				refusal = e
			}
		}
	}
	if refusal == nil || !lastSeen(refusal).After(synced) {
		return nil
	}
	out := &WorksRefused{
		Event:     refusal.Name,
		Count:     refusal.Count,
		FirstSeen: timestamp(firstSeen(refusal)),
		LastSeen:  timestamp(lastSeen(refusal)),
		Members:   SplitRefusals(refusal.Message),
	}
	if out.Count == 0 && refusal.Series != nil {
		// Written through events.k8s.io: the series counts the repeats.
		out.Count = refusal.Series.Count
	}
	if !synced.IsZero() {
		out.LastSynced = timestamp(synced)
	}
	for i := range out.Members {
		out.Members[i].Fix = fixFor(out.Members[i], kind)
	}
	return out
}

// SplitRefusals splits the message of a SyncWorkFailed event into the refusal of each member cluster's Work, in
// the order Karmada joined them. Each keeps the webhook's message from "Work <ns>/<name> would have member cluster
// ..." to its end, without the apiserver's "admission webhook ... denied the request: " before it. A message it
// cannot split (Karmada changed how it joins errors, an event aggregated past recognition) is returned whole, as
// one refusal naming no cluster: never less than what Karmada said.
func SplitRefusals(message string) []WorkRefusal {
	whole := []WorkRefusal{{Message: message}}
	whole[0].Quotas, whole[0].BusinessQuotas = quotasIn(message)
	found := refusalStart.FindAllStringSubmatchIndex(message, -1)
	if len(found) == 0 {
		return whole
	}
	out := make([]WorkRefusal, 0, len(found))
	for i, m := range found {
		end := len(message)
		if i+1 < len(found) {
			end = found[i+1][0]
		}
		segment := message[m[0]:end]
		if tail := strings.Index(segment, workTail); tail >= 0 {
			end := tail + len(workTail)
			if m := renderedWith.FindStringIndex(segment[end:]); m != nil {
				end += m[1]
			}
			segment = segment[:end]
		} else if i+1 < len(found) {
			// Without the webhook's own ending, the separator Karmada put before the next member's error.
			sep := strings.LastIndex(segment, ", ")
			if sep < 0 {
				return whole
			}
			segment = segment[:sep]
		} else {
			segment = strings.TrimSuffix(segment, "]")
		}
		namespace, name, cluster := message[m[2]:m[3]], message[m[4]:m[5]], message[m[6]:m[7]]
		r := WorkRefusal{Cluster: cluster, Work: namespace + "/" + name, Message: segment}
		r.Quotas, r.BusinessQuotas = quotasIn(segment)
		out = append(out, r)
	}
	return out
}

// quotasIn names the quotas a refusal message says refuse it: a denial's "exceeded quota: NAME", an unbounded
// workload's "quota NAME limits what it runs", a Work naming no binding's "quota NAME, cpu: asked ..."; and apart,
// the business quotas of denials reading "exceeded business quota: NAME".
func quotasIn(message string) (quotas, business []string) {
	seen := map[string]bool{}
	add := func(list *[]string, key, name string) {
		if !seen[key] {
			seen[key] = true
			*list = append(*list, name)
		}
	}
	for _, m := range exceededQuota.FindAllStringSubmatch(message, -1) {
		if m[1] != "" {
			add(&business, "business\x00"+m[2], m[2])
		} else {
			add(&quotas, m[2], m[2])
		}
	}
	for _, re := range []*regexp.Regexp{unboundedQuota, overrunQuota} {
		for _, m := range re.FindAllStringSubmatch(message, -1) {
			add(&quotas, m[1], m[1])
		}
	}
	sort.Strings(quotas)
	sort.Strings(business)
	return quotas, business
}

// fixFor says what lets Karmada write a refused Work: the message's own instruction for a workload with no bound
// (a CronJob allowing concurrent Jobs), requests for a quota requiring them, or otherwise more quota or a smaller
// ask on that member.
func fixFor(r WorkRefusal, kind string) string {
	quotas := "the quota"
	if len(r.Quotas)+len(r.BusinessQuotas) > 0 {
		quotas = quotasPhrase(r.Quotas, r.BusinessQuotas)
	}
	where := "there"
	if r.Cluster != "" {
		where = "on " + r.Cluster
	}
	template := "the resource template"
	if kind != "" {
		template = "the " + kind
	}
	// The policies Karmada rendered the Work with, when the webhook named them.
	policies := "its OverridePolicy"
	if i := strings.Index(r.Message, workTail); i >= 0 {
		if m := renderedWith.FindStringSubmatch(r.Message[i+len(workTail):]); m != nil {
			policies = m[1]
		}
	}
	var parts []string
	if strings.Contains(r.Message, "concurrencyPolicy") {
		parts = append(parts, "set spec.concurrencyPolicy to Forbid or Replace in the CronJob, as the message says: with Allow, the Jobs it runs at once have no bound, which no quota limiting them admits")
	}
	if strings.Contains(r.Message, "must specify requests for") {
		parts = append(parts, "set the requests the message names in the pod template (or its OverridePolicy), since "+quotas+" limits them")
	}
	if strings.Contains(r.Message, "requested") || strings.Contains(r.Message, "asked") || len(parts) == 0 {
		ask := "raise " + quotas + limitsNamed(r) + ", or lower what " + template + " or " + policies + " asks " + where
		if strings.Contains(r.Message, "can never fit") {
			ask += " (what it asks alone exceeds hard: waiting does not help)"
		} else {
			ask += ", or free quota: Karmada retries and the Work is admitted once it fits"
		}
		parts = append(parts, ask)
	}
	return strings.Join(parts, "; ")
}

// limitsNamed says which cluster and group limits a refusal names (a quota's limit on one member cluster, or on a
// group of them), after the quotas to raise: "" when it names none.
func limitsNamed(r WorkRefusal) string {
	var named []string
	for _, d := range limitDenials(r.Message) {
		place := limitPlace(d.cluster, d.group)
		whose := d.quota + "'s"
		if d.business {
			whose = "business quota " + whose
		}
		// "its" when the refusal names this one quota alone.
		alone := r.Quotas
		if d.business {
			alone = r.BusinessQuotas
		}
		if len(r.Quotas)+len(r.BusinessQuotas) == 1 && len(alone) == 1 && alone[0] == d.quota {
			whose = "its"
		}
		if phrase := whose + " limit in " + place; !slices.Contains(named, phrase) {
			named = append(named, phrase)
		}
	}
	if len(named) == 0 {
		return ""
	}
	return " (" + strings.Join(named, ", ") + ")"
}

// clusterOf is the member cluster whose execution namespace (karmada-es-<cluster>) holds a Work; empty for any
// other namespace.
func clusterOf(namespace string) string {
	cluster, err := names.GetClusterName(namespace)
	if err != nil {
		return ""
	}
	return cluster
}

// lastSeen is when an event last happened: the latest of its timestamps, whichever API wrote it (core/v1 recorders
// set firstTimestamp and lastTimestamp; events.k8s.io writers eventTime and series), or its creation when it has
// none.
func lastSeen(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	for _, c := range []time.Time{e.FirstTimestamp.Time, e.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.Time.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if t.IsZero() {
		return e.CreationTimestamp.Time
	}
	return t
}

// firstSeen is when an event first happened.
func firstSeen(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.FirstTimestamp.Time, e.EventTime.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return lastSeen(e)
}

// newer orders two events by when they last happened, then by name (a recorder names an event after its creation
// time in nanoseconds), so that the choice never depends on the order the apiserver listed them in.
func newer(a, b *corev1.Event) bool {
	ta, tb := lastSeen(a), lastSeen(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Name > b.Name
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
