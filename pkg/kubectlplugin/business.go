package kubectlplugin

import (
	"context"
	"fmt"
	"io"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin/report"
)

// newBusinessCommand is `business [NAME]`, the cluster admins' view of business quotas. It is a subcommand of its
// own, not a flag of describe or list: a business quota is cluster-scoped (-n and -A mean nothing to it), and
// reading it takes rights a team does not have, which a failure can then explain for what was asked.
func newBusinessCommand(o *options) *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:     "business [NAME]",
		Aliases: []string{"kbq"},
		Short:   "List business quotas, or describe one: its limits over a business's namespaces, and each one's part",
		Long: "Read KarmadaBusinessQuotas, which limit what the namespaces of a business (chosen by their labels) use\n" +
			"together across every member cluster. They name every namespace of the business and what each uses, so\n" +
			"cluster admins read them: a team reads the business quotas of its namespace, and its own part of them,\n" +
			"with `describe -n NAMESPACE`.\n\n" +
			"Without NAME, list every business quota: the namespaces it selects, used against hard per limited resource,\n" +
			"and whether its status is current. With NAME, describe it as `describe` describes a quota: its selector,\n" +
			"a Resource / Used / Reserved / Hard table over the business, what each namespace uses, what the business\n" +
			"uses in each member cluster, the bindings of its namespaces waiting on it, and its reservations.\n\n" +
			"It is a command of its own rather than a flag of describe or list: a business quota belongs to no\n" +
			"namespace (-n and -A do not apply), and reading it takes a right teams do not have.",
		Example: "  kubectl karmada quota business\n  kubectl karmada quota business shop\n  kubectl karmada quota business shop -o yaml",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			r, err := o.reader()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				return o.describeBusiness(cmd.Context(), r, &out, args[0])
			}
			business, err := r.businessQuotas(cmd.Context())
			if err != nil {
				return err
			}
			listed := report.ListBusiness(business)
			if len(listed) == 0 && out.format == "" {
				fmt.Fprintln(o.streams.ErrOut, "No KarmadaBusinessQuotas found.")
				return nil
			}
			return out.print(o.streams.Out, report.BusinessQuotaList{Items: listed}, func(w io.Writer) error {
				return report.WriteBusinessQuotas(w, listed)
			})
		},
	}
	out.addFlag(cmd)
	return cmd
}

// describeBusiness prints business quota name whole: what the quota and its ledger hold, and the bindings of the
// namespaces it counts waiting on it.
func (o *options) describeBusiness(ctx context.Context, r *reader, out *output, name string) error {
	b, err := r.businessQuota(ctx, name)
	if err != nil {
		return err
	}
	stored, warning, err := r.businessLedger(ctx, name)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", warning)
	}
	var bindings []workv1alpha2.ResourceBinding
	waitingUnknown := ""
	// The namespaces the controller counted at its last recount: those whose use the quota shows.
	for _, n := range b.Status.Namespaces {
		in, err := r.bindings(ctx, n.Name)
		if err != nil {
			// Someone allowed to read business quotas but not bindings still gets the quota.
			if !apierrors.IsForbidden(err) {
				return err
			}
			waitingUnknown = fmt.Sprintf("you may not list ResourceBindings in namespace %s", n.Name)
			fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", err)
			break
		}
		bindings = append(bindings, in...)
	}
	described := report.DescribeBusiness(b, stored, bindings)
	if waitingUnknown != "" {
		described.Waiting, described.WaitingUnknown = nil, waitingUnknown
	}
	return out.print(o.streams.Out, described, func(w io.Writer) error { return report.WriteQuota(w, described) })
}
