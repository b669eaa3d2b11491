package rbac

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// access is one question: a verb on a resource (and subresource) in a namespace ("" for cluster scope), maybe of
// one named object.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	if a.name != "" {
		r += "/" + a.name
	}
	where := "cluster"
	if a.namespace != "" {
		where = a.namespace
	}
	return fmt.Sprintf("%s %s in %s", a.verb, r, where)
}

func (a access) attributes() authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
		Namespace: a.namespace, Name: a.name}
}

const (
	quotaGroup   = "quota.karmada.io"
	workGroup    = "work.karmada.io"
	webhookGroup = "admissionregistration.k8s.io"
	leaseGroup   = "coordination.k8s.io"
)

func quotas(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadaquotas", namespace: teamNamespace}
}
func quotaStatus(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadaquotas", subresource: "status", namespace: teamNamespace}
}
func ledgers(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadaquotaledgers", namespace: teamNamespace}
}
func businessQuotas(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadabusinessquotas"}
}
func businessQuotaStatus(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadabusinessquotas", subresource: "status"}
}
func businessLedgers(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "karmadabusinessquotaledgers"}
}
func appliedBusinessQuotas(verb string) access {
	return access{verb: verb, group: quotaGroup, resource: "appliedbusinessquotas", namespace: teamNamespace}
}
func namespaces(verb string) access {
	return access{verb: verb, resource: "namespaces"}
}
func bindings(verb string) access {
	return access{verb: verb, group: workGroup, resource: "resourcebindings", namespace: teamNamespace}
}
func webhookConfiguration(verb, name string) access {
	return access{verb: verb, group: webhookGroup, resource: "validatingwebhookconfigurations", name: name}
}
func leases(verb string) access {
	return access{verb: verb, group: leaseGroup, resource: "leases", namespace: karmadaNamespace}
}
func deployments(verb string) access {
	return access{verb: verb, group: "apps", resource: "deployments", namespace: teamNamespace}
}

// works asks about the Works of a member's execution namespace.
func works(verb string) access {
	return access{verb: verb, group: workGroup, resource: "works", namespace: "karmada-es-member1"}
}
func events(verb string) access {
	return access{verb: verb, resource: "events", namespace: teamNamespace}
}

// memberNodes asks about nodes. The chart's ClusterRole karmada-quota-member-reader and its binding are resource
// templates here, which Karmada propagates unchanged to every member: what they grant here, they grant the same
// identities in each member, where the components read nodes through the cluster proxy.
func memberNodes(verb string) access {
	return access{verb: verb, resource: "nodes"}
}

// allowed marks, per question, which of webhook, controller, team and namespace admin may: W, C, T, A.
type row struct {
	access
	allowed string
}

// matrix is the design's answer to who may do what (design.md §9: business teams read quotas through the stock
// roles; only karmada-quota's own identities write status), and each component holds exactly what its code needs
// (the +kubebuilder:rbac markers next to that code).
var matrix = []row{
	// Quotas: everyone reads; nobody writes them this way (as for a ResourceQuota, cluster admins set them).
	{quotas("get"), "WCTA"}, {quotas("list"), "WCTA"}, {quotas("watch"), "WCTA"},
	{quotas("create"), ""}, {quotas("update"), ""}, {quotas("patch"), ""}, {quotas("delete"), ""}, {quotas("deletecollection"), ""},
	// Status: read by all; written by the controller alone, by update only (the webhook writes ledgers).
	{quotaStatus("get"), "CTA"}, {quotaStatus("update"), "C"}, {quotaStatus("patch"), ""},
	// Ledgers: read by all (describe lists the reservations); written by the webhook (reservations) and the
	// controller (settling them, usage), by create and update, and by the controller's settle patch
	// (quotaio.SettleLedger); deleted with their quota, by the garbage collector.
	{ledgers("get"), "WCTA"}, {ledgers("list"), "WCTA"}, {ledgers("watch"), "WCTA"},
	{ledgers("create"), "WC"}, {ledgers("update"), "WC"}, {ledgers("patch"), "C"}, {ledgers("delete"), ""},
	// Business quotas, and their ledgers, name every namespace of the business and what it uses: cluster admins'
	// and karmada-quota's. A team reads its own part in its namespace's AppliedBusinessQuota, which only the
	// controller writes. Both components read namespaces' labels, which business quotas select them by.
	{businessQuotas("get"), "WC"}, {businessQuotas("list"), "WC"}, {businessQuotas("watch"), "WC"},
	{businessQuotas("create"), ""}, {businessQuotas("update"), ""}, {businessQuotas("delete"), ""},
	{businessQuotaStatus("update"), "C"}, {businessQuotaStatus("patch"), ""},
	{businessLedgers("get"), "WC"}, {businessLedgers("list"), "WC"}, {businessLedgers("watch"), "WC"},
	{businessLedgers("create"), "WC"}, {businessLedgers("update"), "WC"}, {businessLedgers("patch"), "C"},
	{businessLedgers("delete"), ""},
	{appliedBusinessQuotas("get"), "CTA"}, {appliedBusinessQuotas("list"), "CTA"}, {appliedBusinessQuotas("watch"), "CTA"},
	{appliedBusinessQuotas("create"), "C"}, {appliedBusinessQuotas("update"), "C"}, {appliedBusinessQuotas("delete"), "C"},
	{appliedBusinessQuotas("patch"), ""},
	{namespaces("get"), "WC"}, {namespaces("list"), "WC"}, {namespaces("watch"), "WC"}, {namespaces("update"), ""},
	// Bindings: the webhook reads one; the controller watches them all and patches (requeue); teams read.
	{bindings("get"), "WCTA"}, {bindings("list"), "CTA"}, {bindings("watch"), "CTA"},
	{bindings("patch"), "C"}, {bindings("update"), ""}, {bindings("create"), ""}, {bindings("delete"), ""},
	// Templates: both components read them for their priority class; nobody here needs to watch them.
	{deployments("get"), "WCTA"}, {deployments("list"), "WCTA"}, {deployments("watch"), "TA"},
	// The webhook configuration: only the controller, only its own, to keep the CA bundle in sync.
	{webhookConfiguration("get", "karmada-quota"), "C"}, {webhookConfiguration("patch", "karmada-quota"), "C"},
	{webhookConfiguration("get", "karmada-webhook"), ""}, {webhookConfiguration("patch", "karmada-webhook"), ""},
	{webhookConfiguration("list", ""), ""}, {webhookConfiguration("delete", "karmada-quota"), ""},
	// The controller's leader election Lease.
	{leases("get"), "C"}, {leases("create"), "C"}, {leases("update"), "C"}, {leases("delete"), ""}, {leases("list"), ""},
	// Works: the controller watches them all, for what each asks its member to run; nobody here writes them.
	{works("list"), "C"}, {works("watch"), "C"}, {works("update"), ""}, {works("delete"), ""},
	// Events: the controller reports on quotas and bindings, the webhook on override policies a refused Work was
	// rendered with; a namespace admin manages its namespace's (the stock admin role).
	{events("create"), "WCA"}, {events("patch"), "WCA"}, {events("delete"), "A"},
	// Members' nodes: both components list them (a DaemonSet is charged one pod per node it fits), sampling or not;
	// nothing more, and nobody else through karmada-quota.
	{memberNodes("list"), "WC"}, {memberNodes("get"), ""}, {memberNodes("watch"), ""}, {memberNodes("update"), ""},
}

var _ = Describe("RBAC as rendered by the chart", func() {
	It("grants each identity exactly the matrix", func() {
		var wrong []string
		fmt.Fprintf(GinkgoWriter, "%-64s %-10s %-10s %-10s %-10s\n", "access", "webhook", "controller", "team", "ns-admin")
		for _, r := range matrix {
			var line []string
			for i, s := range subjects {
				want := strings.ContainsRune(r.allowed, rune("WCTA"[i]))
				got := can(s, r.attributes())
				line = append(line, fmt.Sprintf("%-10v", got))
				if got != want {
					wrong = append(wrong, fmt.Sprintf("%s: %s may %v, want %v", s.name, r.access, got, want))
				}
			}
			fmt.Fprintf(GinkgoWriter, "%-64s %s\n", r.access, strings.Join(line, " "))
		}
		Expect(wrong).To(BeEmpty())
	})
})
