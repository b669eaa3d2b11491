package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// admissionSampler reads the quota and the bindings until stopped, recording the worst moment seen: what the
// quota had admitted (used + reserved) and what the bindings had placed, for every resource the quota limits.
// Neither may ever exceed hard, whatever fails meanwhile. maxAdmitted and maxPlaced keep the two figures the burst
// specs read: admitted CPU (milli-CPU) and placed replicas.
type admissionSampler struct {
	samples, maxAdmitted, maxPlaced atomic.Int64
	// unreadable counts the ticks at which the quota or the bindings could not be read (the karmada-apiserver was
	// down or busy): no sample, the next one tells.
	unreadable atomic.Int64

	mu sync.Mutex
	// admitted and placed are the largest used + reserved, and the largest sum over the bindings, seen for each
	// limited resource; hard is spec.hard when last read.
	admitted, placed, hard resources.List
	// firstOver describes the first sample in which used + reserved exceeded hard: the status, the bindings and
	// the Works of the namespace then, for the failure message. Written by the sampling goroutine only, read once
	// it is done.
	firstOver string

	stop      chan struct{}
	finishing sync.Once
	done      chan struct{}
}

func sampleAdmissions(ns, name string) *admissionSampler {
	s := &admissionSampler{
		admitted: resources.List{}, placed: resources.List{}, hard: resources.List{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		defer GinkgoRecover()
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// Bindings first: every binding listed was admitted before it was stored, so by the time the ledger
			// is read its charge is still reserved there or already counted in used.
			q := &quotav1alpha1.KarmadaQuota{}
			stored := &quotav1alpha1.KarmadaQuotaLedger{}
			var bindings workv1alpha2.ResourceBindingList
			if karmada.List(ctx, &bindings, client.InNamespace(ns)) != nil ||
				karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q) != nil ||
				client.IgnoreNotFound(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, stored)) != nil {
				s.unreadable.Add(1)
				continue
			}
			s.record(q, quota.LedgerOf(stored, q), bindings.Items)
		}
	}()
	return s
}

// record records one sample: what the ledger admission decides on counts as admitted (used as observed, and what is
// reserved), against what the bindings place.
func (s *admissionSampler) record(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, bindings []workv1alpha2.ResourceBinding) {
	hard, err := resources.Parse(q.Spec.Hard)
	if err != nil {
		return
	}
	l, err := quota.NewLedger(q, stored)
	if err != nil {
		return
	}
	admitted := l.Used()
	admitted.Add(l.Reserved())
	sel, err := usage.NewSelector(q.Spec.ScopeSelector)
	if err != nil {
		return
	}
	for name, h := range hard {
		if admitted[name] > h && s.firstOver == "" {
			s.firstOver = describeOver(q, stored, bindings)
		}
	}
	placed := resources.List{}
	var replicas int64
	for i := range bindings {
		replicas += int64(placedReplicas(&bindings[i]))
		u, err := usage.Of(&bindings[i])
		if err != nil {
			continue // a malformed binding: the controller reports it; it counts nothing here either
		}
		placed.Add(u.Charge(sel).Total)
	}
	s.samples.Add(1)
	s.maxAdmitted.Store(max(s.maxAdmitted.Load(), admitted["requests.cpu"]))
	s.maxPlaced.Store(max(s.maxPlaced.Load(), replicas))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hard = hard
	for name := range hard {
		s.admitted[name] = max(s.admitted[name], admitted[name])
		s.placed[name] = max(s.placed[name], placed[name])
	}
}

// describeOver is what a sample above hard saw: the status, what each binding places, and what each Work of the
// namespace asks, for the failure to say which of them the status counted.
func describeOver(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, bindings []workv1alpha2.ResourceBinding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "at %s, quota resourceVersion %s: status used %v, reserved %v\n", time.Now().Format("15:04:05.000"),
		q.ResourceVersion, q.Status.Used, q.Status.Reserved)
	if stored != nil {
		observed := "none"
		if stored.Observed != nil {
			observed = fmt.Sprint(stored.Observed.Used)
		}
		fmt.Fprintf(&b, "  ledger resourceVersion %s: observed used %s, %d reservations, %d folded\n", stored.ResourceVersion,
			observed, len(stored.Reservations), ptr.Deref(stored.FoldedReservations, quotav1alpha1.FoldedReservations{}).Count)
		for _, r := range stored.Reservations {
			fmt.Fprintf(&b, "    reserved by %s %s generation %d: %v\n", r.ReservedBy.Kind, r.ReservedBy.Name, r.Generation, r.Reserved)
		}
	}
	for _, c := range q.Status.Clusters {
		fmt.Fprintf(&b, "  cluster %s: used %v\n", c.Name, c.Used)
	}
	for i := range bindings {
		rb := &bindings[i]
		fmt.Fprintf(&b, "  binding %s id %s generation %d resourceVersion %s deleting %t: %v\n", rb.Name,
			rb.Labels[workv1alpha2.ResourceBindingPermanentIDLabel], rb.Generation, rb.ResourceVersion, rb.DeletionTimestamp != nil, rb.Spec.Clusters)
	}
	var works workv1alpha1.WorkList
	if err := karmada.List(ctx, &works); err == nil {
		for i := range works.Items {
			w := &works.Items[i]
			if w.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey] != q.Namespace {
				continue
			}
			var replicas []any
			for _, m := range w.Spec.Workload.Manifests {
				var obj struct {
					Spec struct {
						Replicas any `json:"replicas"`
					} `json:"spec"`
				}
				_ = json.Unmarshal(m.Raw, &obj)
				replicas = append(replicas, obj.Spec.Replicas)
			}
			fmt.Fprintf(&b, "  Work %s/%s of %s id %s generation %d resourceVersion %s deleting %t: replicas %v\n", w.Namespace, w.Name,
				w.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey], w.Labels[workv1alpha2.ResourceBindingPermanentIDLabel],
				w.Generation, w.ResourceVersion, w.DeletionTimestamp != nil, replicas)
		}
	}
	return b.String()
}

// worst returns, per limited resource, the largest used + reserved and the largest placed seen, and hard.
func (s *admissionSampler) worst() (admitted, placed, hard resources.List) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted.Clone(), s.placed.Clone(), s.hard.Clone()
}

// expectNeverAboveHard stops the sampler and checks what it saw throughout: it read the quota, and neither
// used + reserved nor what the bindings placed ever exceeded hard.
func (s *admissionSampler) expectNeverAboveHard() {
	GinkgoHelper()
	s.finish()
	Expect(s.samples.Load()).To(BeNumerically(">", 10), "the sampler read the quota and the bindings")
	admitted, placed, hard := s.worst()
	Expect(hard).NotTo(BeEmpty(), "the sampler read the quota's hard")
	for name, h := range hard {
		Expect(admitted[name]).To(BeNumerically("<=", h), "used + reserved of %s exceeded hard; first seen %s", name, s.firstOver)
		Expect(placed[name]).To(BeNumerically("<=", h), "the bindings placed more %s than hard", name)
	}
}

func (s *admissionSampler) finish() {
	s.finishing.Do(func() { close(s.stop) })
	<-s.done
}

// schedulingObserver watches a namespace's bindings and counts the scheduler's outcomes as Karmada reports them in
// each binding's Scheduled condition: placements scheduled, refused by the quota (QuotaExceeded), and failed for
// another reason (a webhook that could not be reached, a cluster that does not fit), which the scheduler retries.
// A condition is counted once per change, so an informer's relist after a restart counts nothing twice; two
// outcomes between two observations count as one.
type schedulingObserver struct {
	mu                         sync.Mutex
	last                       map[types.UID]string
	scheduled, refused, failed int
	// failures counts the other outcomes by reason, with the first messages seen.
	failures        map[string]int
	failureMessages []string
	// webhookFailures are the failed placements whose write no webhook could decide (the karmada-apiserver
	// failed calling one, failurePolicy Fail), with when the observer saw them and the message.
	webhookFailures []observedFailure
	stop            context.CancelFunc
}

type observedFailure struct {
	at      time.Time
	message string
}

// webhookUndecided reports whether a failed placement's message says no decision was had on the binding write:
// the karmada-apiserver failed calling a webhook (failurePolicy Fail), or karmada-quota's binding webhook answered
// an error instead of a decision (it fails closed when it cannot read or write the quota). Its refusals,
// QuotaExceeded, are counted apart.
func webhookUndecided(message string) bool {
	return strings.Contains(message, "failed calling webhook") ||
		strings.Contains(message, fmt.Sprintf("admission webhook %q", webhookconfig.BindingWebhook))
}

var silenceControllerRuntime sync.Once

func observeScheduling(ns string) *schedulingObserver {
	GinkgoHelper()
	o := &schedulingObserver{last: map[types.UID]string{}, failures: map[string]int{}}
	// The informer logs through controller-runtime's logger, which the suite otherwise never sets.
	silenceControllerRuntime.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	cfg, err := localkarmada.RESTConfig(env.Karmada.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	informers, err := crcache.New(cfg, crcache.Options{
		Scheme: localkarmada.Scheme, DefaultNamespaces: map[string]crcache.Config{ns: {}},
	})
	Expect(err).NotTo(HaveOccurred())
	informer, err := informers.GetInformer(ctx, &workv1alpha2.ResourceBinding{})
	Expect(err).NotTo(HaveOccurred())
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    o.observe,
		UpdateFunc: func(_, obj any) { o.observe(obj) },
	})
	Expect(err).NotTo(HaveOccurred())
	watchCtx, stop := context.WithCancel(ctx)
	o.stop = stop
	go func() { _ = informers.Start(watchCtx) }()
	Expect(informers.WaitForCacheSync(ctx)).To(BeTrue())
	return o
}

func (o *schedulingObserver) observe(obj any) {
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return
	}
	cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
	if cond == nil {
		return
	}
	// A success is told from the previous one by the generation it scheduled and when; a refusal by its message,
	// which names the amounts.
	key := fmt.Sprintf("%s/%s/%s/%d/%v", cond.Status, cond.Reason, cond.Message, rb.Status.SchedulerObservedGeneration, rb.Status.LastScheduledTime)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last[rb.UID] == key {
		return
	}
	o.last[rb.UID] = key
	switch {
	case cond.Status == metav1.ConditionTrue:
		o.scheduled++
	case cond.Reason == workv1alpha2.BindingReasonQuotaExceeded:
		o.refused++
	default:
		o.failed++
		o.failures[cond.Reason]++
		if webhookUndecided(cond.Message) {
			o.webhookFailures = append(o.webhookFailures, observedFailure{at: time.Now(), message: rb.Name + ": " + cond.Message})
		}
		if len(o.failureMessages) < 5 {
			o.failureMessages = append(o.failureMessages, rb.Name+": "+cond.Reason+": "+cond.Message)
		}
	}
}

// undecided returns the placements that failed for want of a webhook's decision, so far.
func (o *schedulingObserver) undecided() []observedFailure {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.webhookFailures)
}

// counts returns the outcomes counted so far.
func (o *schedulingObserver) counts() (scheduled, refused, failed int, failures map[string]int, messages []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.scheduled, o.refused, o.failed, maps.Clone(o.failures), slices.Clone(o.failureMessages)
}
