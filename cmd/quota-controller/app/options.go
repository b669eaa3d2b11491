package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
)

// Options are the controller's flags.
type Options struct {
	command.Common
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	ResyncPeriod            time.Duration
	Workers                 int
	RequeueCooldown         time.Duration
	SettleInterval          time.Duration
	SettleBacklog           int
	StatusInterval          time.Duration
	ViewInterval            time.Duration
	MemberSampleInterval    time.Duration
	MemberGrace             time.Duration
	GracefulEvictionTimeout time.Duration
	// Certs manage the webhook's certificates; HostKubeconfig reaches the host cluster, where their Secrets live.
	Certs          certs.Options
	HostKubeconfig string
	// EstimatorAddress is host:port where the webhook's scheduler estimator is reached; empty keeps no estimator
	// Services. EstimatorServices say where karmada-scheduler looks for them.
	EstimatorAddress  string
	EstimatorServices discovery.Options
}

// The leader election Lease lives in the default --leader-elect-resource-namespace; an install that moves it
// must grant the same there.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=karmada-system,resources=leases,verbs=get;create;update

// NewOptions returns the defaults. The lease timings are Kubernetes' own controller defaults.
func NewOptions() *Options {
	return &Options{
		// A cold recount writes the first status of every quota: at 50/s, 10,000 quotas took 3 minutes. Its
		// requests in flight are bounded by --workers; the apiserver's priority and fairness queues them.
		Common:                  command.NewCommon(500, 1000),
		LeaderElect:             true,
		LeaderElectionNamespace: "karmada-system",
		LeaderElectionID:        "karmada-quota-controller",
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		ResyncPeriod:            5 * time.Minute,
		Workers:                 4,
		RequeueCooldown:         30 * time.Second,
		SettleInterval:          controller.DefaultSettleInterval,
		SettleBacklog:           controller.DefaultSettleBacklog,
		StatusInterval:          controller.DefaultStatusInterval,
		ViewInterval:            controller.DefaultViewInterval,
		MemberSampleInterval:    time.Minute,
		MemberGrace:             2 * time.Minute,
		GracefulEvictionTimeout: controller.DefaultGracefulEvictionTimeout,
		Certs:                   certs.NewOptions(),
		// karmada-scheduler's defaults, but for the prefix: its default names karmada-scheduler-estimator's
		// Services, which an admin may run besides.
		EstimatorServices: discovery.Options{Scheduler: discovery.Lookup{Namespace: "karmada-system", Prefix: "karmada-quota-estimator", Port: 10352}},
	}
}

// AddFlags binds the options to fs. The leader election flags carry the names Kubernetes and Karmada components
// use, so an operator's habits carry over.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Common.AddFlags(fs, "reconciles")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect one active replica. Two controllers writing the same quota status would only fight over it; keep this on whenever more than one replica runs.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-elect-resource-namespace", o.LeaderElectionNamespace,
		"Namespace, in the karmada-apiserver, of the Lease that elects the leader.")
	fs.StringVar(&o.LeaderElectionID, "leader-elect-resource-name", o.LeaderElectionID,
		"Name of the Lease that elects the leader. Replicas that share it share one leader.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration,
		"How long a standby waits after the last renewal before taking over from a leader that vanished.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline,
		"How long the leader keeps trying to renew before it gives up leading. Must be shorter than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod,
		"How often replicas try to acquire or renew the lease. Must be well below the renew deadline.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod,
		"How often every quota is recounted from scratch. A backstop: it repairs missed events and status someone edited by hand.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "How many quotas are reconciled at once.")
	fs.DurationVar(&o.RequeueCooldown, "requeue-cooldown", o.RequeueCooldown,
		"How long a binding waiting with QuotaExceeded is left alone after the controller requeued it, so that a run of usage drops does not requeue the same bindings again and again (a requeue storm on the scheduler). 0 disables it.")
	fs.DurationVar(&o.SettleInterval, "settle-interval", o.SettleInterval,
		"Shortest time between two recounts of one quota that binding changes freeing something cause (a scale-down, a move, a delete: the room goes to waiting bindings); "+
			"the changes in between are recounted together, in one write of the quota's ledger. Changes that only grow wait for --status-interval instead. "+
			"Admitted writes stay charged by their reservations meanwhile; only how soon used shows them waits. 0 recounts on every change.")
	fs.DurationVar(&o.StatusInterval, "status-interval", o.StatusInterval,
		"Shortest time between two writes of one quota's status that only move what it shows used and reserved; any other change is written at once. "+
			"Admission decides on the quota's ledger, settled every --settle-interval; only how soon kubectl and the metrics show the counts waits. 0 writes every change at once.")
	fs.DurationVar(&o.ViewInterval, "business-view-interval", o.ViewInterval,
		"Shortest time between two writes of the AppliedBusinessQuotas of one business quota (the view each of its namespaces reads) "+
			"that only move what they show used and reserved: a business over many namespaces would otherwise write one per namespace "+
			"at every change of its totals. A namespace joining or leaving, and a new spec, are written at once. 0 writes every change at once.")
	fs.IntVar(&o.SettleBacklog, "settle-backlog", o.SettleBacklog,
		"How many reservations a quota may hold before a binding change recounts it without waiting for --settle-interval.")
	// Hidden: a tuning knob of the pacing, measured once (docs/performance.md); --settle-interval is the one to reach for.
	_ = fs.MarkHidden("settle-backlog")
	fs.DurationVar(&o.MemberSampleInterval, "member-sample-interval", o.MemberSampleInterval,
		"How often the pods of every Ready member cluster are read through Karmada's cluster proxy (one paged list of "+
			"the pods that have not terminated, per member) and shown next to what each quota charges there. 0 reads none.")
	fs.DurationVar(&o.MemberGrace, "member-grace", o.MemberGrace,
		"How long a member may run more than a quota charges there before the quota's MembersWithinQuota condition turns False: "+
			"a rolling update runs its surge pods for a while.")
	fs.DurationVar(&o.GracefulEvictionTimeout, "graceful-eviction-timeout", o.GracefulEvictionTimeout,
		"karmada-controller-manager's --graceful-eviction-timeout: how long Karmada keeps the replicas of a cluster it evicts a binding from, when "+
			"the eviction names no grace period of its own. Only what quota status shows as evictingUntil depends on it; set it as Karmada's is.")
	fs.StringVar(&o.EstimatorAddress, "estimator-address", o.EstimatorAddress,
		"host:port at which karmada-scheduler reaches the webhook's scheduler estimator (quota-webhook --estimator-bind-address), "+
			"for example karmada-quota-webhook.karmada-system.svc:10352. When set, the controller keeps in the karmada-apiserver one "+
			"ExternalName Service per member cluster pointing there, named as karmada-scheduler looks for its estimators; start "+
			"karmada-scheduler with --enable-scheduler-estimator and --scheduler-estimator-service-prefix set to --estimator-service-prefix. Empty keeps none.")
	fs.StringVar(&o.EstimatorServices.Scheduler.Prefix, "estimator-service-prefix", o.EstimatorServices.Scheduler.Prefix,
		"karmada-scheduler's --scheduler-estimator-service-prefix: the estimator Services are named <prefix>-<cluster>.")
	fs.StringVar(&o.EstimatorServices.Scheduler.Namespace, "estimator-service-namespace", o.EstimatorServices.Scheduler.Namespace,
		"karmada-scheduler's --scheduler-estimator-service-namespace: the karmada-apiserver namespace of the estimator Services.")
	fs.Int32Var(&o.EstimatorServices.Scheduler.Port, "scheduler-estimator-port", o.EstimatorServices.Scheduler.Port,
		"karmada-scheduler's --scheduler-estimator-port: the Service port it looks up.")
	o.Certs.AddFlags(fs)
	fs.StringVar(&o.HostKubeconfig, "host-kubeconfig", o.HostKubeconfig,
		"Kubeconfig of the host cluster, where the certificate Secrets live; read only when --webhook-cert-mode is not none. Empty: $KUBECONFIG, else the pod's in-cluster config.")
}

// ControllerOptions are the options the quota controller itself takes. It is the one place they are derived from
// the flags, so Validate and Run cannot disagree about them.
func (o *Options) ControllerOptions() controller.Options {
	return controller.Options{
		ResyncPeriod:         o.ResyncPeriod,
		Workers:              o.Workers,
		RequeueCooldown:      o.RequeueCooldown,
		SettleInterval:       o.SettleInterval,
		SettleBacklog:        o.SettleBacklog,
		StatusInterval:       o.StatusInterval,
		ViewInterval:         o.ViewInterval,
		MemberSampleInterval: o.MemberSampleInterval,
		MemberGrace:          o.MemberGrace,
		EvictionTimeout:      o.GracefulEvictionTimeout,
		FirstPassDone: func() {
			command.Started("every quota recounted since the start")
		},
		Clock: clock.RealClock{},
	}
}

// Validate reports every invalid option at once. The controller's own options are checked by the controller, so
// their rules live in one place.
func (o *Options) Validate() error {
	var errs []error
	if o.LeaderElect {
		errs = append(errs, o.validateLeaderElection()...)
	}
	if err := o.ControllerOptions().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Certs.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.EstimatorAddress != "" {
		if _, err := o.estimatorServices(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, o.Common.Validate()...)
	return errors.Join(errs...)
}

// validateLeaderElection checks the leader election flags. They are checked only when leader election is on,
// since otherwise nothing reads them.
func (o *Options) validateLeaderElection() []error {
	var errs []error
	if o.LeaderElectionNamespace == "" {
		errs = append(errs, errors.New("--leader-elect-resource-namespace must be set when --leader-elect is on"))
	}
	if o.LeaderElectionID == "" {
		errs = append(errs, errors.New("--leader-elect-resource-name must be set when --leader-elect is on"))
	}
	timingsPositive := true
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--leader-elect-lease-duration", o.LeaseDuration},
		{"--leader-elect-renew-deadline", o.RenewDeadline},
		{"--leader-elect-retry-period", o.RetryPeriod},
	} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.flag, d.value))
			timingsPositive = false
		}
	}
	// How the timings relate is only worth reporting once each makes sense on its own.
	if !timingsPositive {
		return errs
	}
	if o.RenewDeadline >= o.LeaseDuration {
		// Otherwise a standby could take over while the old leader still believes it leads.
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration, got %s and %s", o.RenewDeadline, o.LeaseDuration))
	}
	// client-go jitters each retry by up to JitterFactor times the retry period and refuses to start unless the
	// renew deadline exceeds that; checking it here says so before the manager fails with a less helpful error.
	if o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline must exceed %v times --leader-elect-retry-period (client-go's retry jitter), got %s and %s",
			leaderelection.JitterFactor, o.RenewDeadline, o.RetryPeriod))
	}
	return errs
}

// estimatorServices completes the estimator Services' options with --estimator-address.
func (o *Options) estimatorServices() (discovery.Options, error) {
	out := o.EstimatorServices
	host, port, err := command.HostPort("--estimator-address", o.EstimatorAddress)
	if err != nil {
		return out, err
	}
	out.Host, out.Port = host, int32(port)
	if err := out.Validate(); err != nil {
		return out, fmt.Errorf("--estimator-address and --estimator-service-*: %w", err)
	}
	return out, nil
}
