package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
)

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		modify func(o *Options)
		// wantErrs are the messages, in order; none means valid.
		wantErrs []string
	}{
		"defaults": {
			modify: func(*Options) {},
		},
		"estimator Services": {
			modify: func(o *Options) { o.EstimatorAddress = "karmada-quota-webhook.karmada-system.svc:10352" },
		},
		"an estimator address that is no host:port": {
			modify:   func(o *Options) { o.EstimatorAddress = "karmada-quota-webhook" },
			wantErrs: []string{`--estimator-address must be host:port, got "karmada-quota-webhook"`},
		},
		"an estimator address on port 0": {
			modify:   func(o *Options) { o.EstimatorAddress = "karmada-quota-webhook:0" },
			wantErrs: []string{`--estimator-address: the port must be between 1 and 65535, got "0"`},
		},
		"estimator Services nowhere": {
			modify: func(o *Options) {
				o.EstimatorAddress = "Webhook_Host:10352"
				o.EstimatorServices.Scheduler = discovery.Lookup{}
			},
			wantErrs: []string{
				`--estimator-address and --estimator-service-*: the estimator Service namespace "": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				"the estimator Service prefix must be set",
				`the estimator host "Webhook_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				"estimator port 0: must be between 1 and 65535, inclusive",
			},
		},
		"no leader election namespace": {
			modify:   func(o *Options) { o.LeaderElectionNamespace = "" },
			wantErrs: []string{"--leader-elect-resource-namespace must be set when --leader-elect is on"},
		},
		"no leader election lease name": {
			modify:   func(o *Options) { o.LeaderElectionID = "" },
			wantErrs: []string{"--leader-elect-resource-name must be set when --leader-elect is on"},
		},
		"lease timings that are not positive": {
			modify: func(o *Options) {
				o.LeaseDuration = 0
				o.RenewDeadline = -time.Second
				o.RetryPeriod = 0
			},
			// How they relate is not reported on top: it means nothing until each is positive.
			wantErrs: []string{
				"--leader-elect-lease-duration must be positive, got 0s",
				"--leader-elect-renew-deadline must be positive, got -1s",
				"--leader-elect-retry-period must be positive, got 0s",
			},
		},
		"a renew deadline equal to the lease duration": {
			modify:   func(o *Options) { o.RenewDeadline = o.LeaseDuration },
			wantErrs: []string{"--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration, got 15s and 15s"},
		},
		"a renew deadline above the jittered retry period (8s × 1.2 = 9.6s)": {
			modify: func(o *Options) {
				o.RenewDeadline = 10 * time.Second
				o.RetryPeriod = 8 * time.Second
			},
		},
		"a retry period below the renew deadline but within its jitter": {
			modify:   func(o *Options) { o.RetryPeriod = 9 * time.Second },
			wantErrs: []string{"--leader-elect-renew-deadline must exceed 1.2 times --leader-elect-retry-period (client-go's retry jitter), got 10s and 9s"},
		},
		"a retry period longer than the renew deadline": {
			modify:   func(o *Options) { o.RetryPeriod = 20 * time.Second },
			wantErrs: []string{"--leader-elect-renew-deadline must exceed 1.2 times --leader-elect-retry-period (client-go's retry jitter), got 10s and 20s"},
		},
		"lease timings that make no sense are ignored without leader election": {
			modify: func(o *Options) {
				o.LeaderElect = false
				o.LeaderElectionNamespace = ""
				o.LeaderElectionID = ""
				o.LeaseDuration = 0
				o.RenewDeadline = time.Hour
				o.RetryPeriod = -time.Second
			},
		},
		"no resync": {
			modify:   func(o *Options) { o.ResyncPeriod = 0 },
			wantErrs: []string{"the resync period must be positive"},
		},
		"no workers": {
			modify:   func(o *Options) { o.Workers = 0 },
			wantErrs: []string{"workers must be positive"},
		},
		"no requeue cooldown": {
			modify: func(o *Options) { o.RequeueCooldown = 0 },
		},
		"a negative requeue cooldown": {
			modify:   func(o *Options) { o.RequeueCooldown = -time.Second },
			wantErrs: []string{"the requeue cooldown must not be negative"},
		},
		"certificate options are checked with the rest": {
			modify: func(o *Options) {
				o.Certs.Mode = certs.ModeSelfManaged
				o.Certs.Validity = time.Second
			},
			wantErrs: []string{"--webhook-cert-validity must be at least 1m0s, got 1s"},
		},
		"client rate limits and shutdown timeout": {
			modify: func(o *Options) {
				o.KubeAPIQPS = 0
				o.KubeAPIBurst = -1
				o.GracefulShutdownTimeout = 0
			},
			wantErrs: []string{
				"--kube-api-qps must be positive, got 0",
				"--kube-api-burst must be positive, got -1",
				"--graceful-shutdown-timeout must be positive, got 0s",
			},
		},
		"every error is reported at once": {
			modify: func(o *Options) {
				o.LeaderElectionNamespace = ""
				o.RenewDeadline = time.Minute
				o.ResyncPeriod = -time.Minute
				o.Workers = -1
				o.RequeueCooldown = -time.Second
				o.KubeAPIQPS = -1
				o.GracefulShutdownTimeout = -time.Second
			},
			wantErrs: []string{
				"--leader-elect-resource-namespace must be set when --leader-elect is on",
				"--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration, got 1m0s and 15s",
				"the resync period must be positive",
				"workers must be positive",
				"the requeue cooldown must not be negative",
				"--kube-api-qps must be positive, got -1",
				"--graceful-shutdown-timeout must be positive, got -1s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(o)
			var got []string
			if err := o.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsAddFlags(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("quota-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--kubeconfig=/etc/karmada/karmada.config",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=:9081",
		"--pprof-bind-address=127.0.0.1:6060",
		"--leader-elect=false",
		"--leader-elect-resource-namespace=quota-system",
		"--leader-elect-resource-name=quota-leader",
		"--leader-elect-lease-duration=30s",
		"--leader-elect-renew-deadline=20s",
		"--leader-elect-retry-period=5s",
		"--resync-period=10m",
		"--workers=8",
		"--requeue-cooldown=1m",
		"--settle-interval=2s",
		"--member-sample-interval=30s",
		"--member-grace=5m",
		"--kube-api-qps=20.5",
		"--kube-api-burst=40",
		"--graceful-shutdown-timeout=45s",
		"--webhook-cert-mode=self-managed",
		"--webhook-cert-namespace=quota-system",
		"--host-kubeconfig=/etc/host/kubeconfig",
		"--estimator-address=karmada-quota-webhook.quota-system.svc:10400",
		"--estimator-service-prefix=quota-estimator",
		"--estimator-service-namespace=scheduling",
		"--scheduler-estimator-port=10500",
		"--status-interval=3s",
	}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Options{
		Common: command.Common{
			Kubeconfig:              "/etc/karmada/karmada.config",
			MetricsBindAddress:      "0",
			HealthProbeBindAddress:  ":9081",
			PprofBindAddress:        "127.0.0.1:6060",
			KubeAPIQPS:              20.5,
			KubeAPIBurst:            40,
			GracefulShutdownTimeout: 45 * time.Second,
		},
		LeaderElect:             false,
		LeaderElectionNamespace: "quota-system",
		LeaderElectionID:        "quota-leader",
		LeaseDuration:           30 * time.Second,
		RenewDeadline:           20 * time.Second,
		RetryPeriod:             5 * time.Second,
		ResyncPeriod:            10 * time.Minute,
		Workers:                 8,
		RequeueCooldown:         time.Minute,
		SettleInterval:          2 * time.Second,
		SettleBacklog:           controller.DefaultSettleBacklog,
		StatusInterval:          3 * time.Second,
		ViewInterval:            controller.DefaultViewInterval,
		MemberSampleInterval:    30 * time.Second,
		MemberGrace:             5 * time.Minute,
		GracefulEvictionTimeout: controller.DefaultGracefulEvictionTimeout,
		Certs:                   certs.NewOptions(),
		HostKubeconfig:          "/etc/host/kubeconfig",
		EstimatorAddress:        "karmada-quota-webhook.quota-system.svc:10400",
		EstimatorServices:       discovery.Options{Scheduler: discovery.Lookup{Namespace: "scheduling", Prefix: "quota-estimator", Port: 10500}},
	}
	want.Certs.Mode = certs.ModeSelfManaged
	want.Certs.Namespace = "quota-system"
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options after parsing (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestOptionsControllerOptions(t *testing.T) {
	o := NewOptions()
	o.ResyncPeriod = 7 * time.Minute
	o.Workers = 3
	o.RequeueCooldown = 12 * time.Second
	o.SettleInterval = time.Second
	o.StatusInterval = 4 * time.Second
	o.ViewInterval = 20 * time.Second
	o.MemberSampleInterval = 0
	o.MemberGrace = 3 * time.Minute
	got := o.ControllerOptions()
	want := controller.Options{ResyncPeriod: 7 * time.Minute, Workers: 3, RequeueCooldown: 12 * time.Second, SettleInterval: time.Second,
		SettleBacklog: controller.DefaultSettleBacklog, StatusInterval: 4 * time.Second, ViewInterval: 20 * time.Second, MemberGrace: 3 * time.Minute,
		EvictionTimeout: controller.DefaultGracefulEvictionTimeout}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(controller.Options{}, "Clock", "FirstPassDone")); diff != "" {
		t.Errorf("controller options (-want +got):\n%s", diff)
	}
	// The start's garbage is returned to the system once every quota is recounted.
	if got.FirstPassDone == nil {
		t.Error("FirstPassDone is nil")
	}
	// The controller compares reservation expiry and cooldowns against this clock; anything but the real one
	// belongs in tests only.
	if _, ok := got.Clock.(clock.RealClock); !ok {
		t.Errorf("Clock = %T, want clock.RealClock", got.Clock)
	}
}
