package localkarmada

import (
	"slices"
	"testing"
)

func TestWithFeatureGate(t *testing.T) {
	cases := map[string]struct {
		args []string
		gate string
		on   bool
		want []string
	}{
		"off: removed, the others kept": {
			args: []string{"--kubeconfig", "k", "--feature-gates=Failover=true,ResourceQuotaEstimate=true"},
			gate: "ResourceQuotaEstimate",
			want: []string{"--kubeconfig", "k", "--feature-gates=Failover=true"},
		},
		"on again": {
			args: []string{"--kubeconfig", "k", "--feature-gates=Failover=true"},
			gate: "ResourceQuotaEstimate", on: true,
			want: []string{"--kubeconfig", "k", "--feature-gates=Failover=true,ResourceQuotaEstimate=true"},
		},
		"on, set false before": {
			args: []string{"--feature-gates=ResourceQuotaEstimate=false"},
			gate: "ResourceQuotaEstimate", on: true,
			want: []string{"--feature-gates=ResourceQuotaEstimate=true"},
		},
		"on, no flag yet": {
			args: []string{"--kubeconfig", "k"},
			gate: "Failover", on: true,
			want: []string{"--kubeconfig", "k", "--feature-gates=Failover=true"},
		},
		"off, the last gate: the flag goes": {
			args: []string{"--feature-gates=Failover=true", "--v=2"},
			gate: "Failover",
			want: []string{"--v=2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := WithFeatureGate(tc.gate, tc.on)(slices.Clone(tc.args)); !slices.Equal(got, tc.want) {
				t.Errorf("args = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWithFlag(t *testing.T) {
	args := []string{"--kubeconfig", "k", "--enable-scheduler-estimator=false", "--v=2"}
	got := WithFlag("enable-scheduler-estimator", "true")(slices.Clone(args))
	want := []string{"--kubeconfig", "k", "--v=2", "--enable-scheduler-estimator=true"}
	if !slices.Equal(got, want) {
		t.Errorf("args = %q, want %q", got, want)
	}
}
