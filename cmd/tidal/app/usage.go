package app

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tidal-autoscaler/tidal/config"
)

// FlagSection is a titled group of flags in --help.
type FlagSection struct {
	Title string
	Names []string
}

// flagSections sorts a command's flags into --help's groups: extra first
// (tidal-local's own), then tidal's own, Cluster Autoscaler's, logging and
// the feature gates. Hidden flags (CA's accepted without effect) are left
// out.
func flagSections(fs *pflag.FlagSet, extra ...FlagSection) []FlagSection {
	logging := loggingFlagNames()
	ca := map[string]bool{}
	for _, f := range config.CAFlags() {
		if f.Status == config.CAFlagImplemented {
			ca[f.Name] = true
		}
	}
	taken := map[string]bool{}
	for _, s := range extra {
		for _, n := range s.Names {
			taken[n] = true
		}
	}
	own := FlagSection{Title: "tidal's flags"}
	caSec := FlagSection{Title: "Cluster Autoscaler's flags, with CA's meaning (docs/ca-flags.md)"}
	logSec := FlagSection{Title: "Logging flags (Kubernetes' standard ones)"}
	gates := FlagSection{Title: "Feature gates"}
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Hidden || taken[f.Name]:
		case f.Name == "feature-gates":
			gates.Names = append(gates.Names, f.Name)
		case logging[f.Name]:
			logSec.Names = append(logSec.Names, f.Name)
		case ca[f.Name]:
			caSec.Names = append(caSec.Names, f.Name)
		default:
			own.Names = append(own.Names, f.Name)
		}
	})
	return slices.DeleteFunc(append(extra, own, caSec, logSec, gates), func(s FlagSection) bool { return len(s.Names) == 0 })
}

// loggingFlagNames are the flags addLoggingFlags registers.
func loggingFlagNames() map[string]bool {
	fs := pflag.NewFlagSet("logging", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	addLoggingFlags(fs, logsapi.NewLoggingConfiguration())
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// SetGroupedHelp makes cmd's --help list its flags in sections (extra
// first); its subcommands keep cobra's help.
func SetGroupedHelp(cmd *cobra.Command, extra ...FlagSection) {
	plain := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c != cmd {
			plain(c, args)
			return
		}
		writeGroupedHelp(c.OutOrStdout(), c, flagSections(c.Flags(), extra...))
	})
}

func writeGroupedHelp(w io.Writer, c *cobra.Command, sections []FlagSection) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s [flags]\n", strings.TrimSpace(c.Long+"\n\n"+c.Short), c.CommandPath())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s [command]\n\nCommands:\n", c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-11s %s\n", sub.Name(), sub.Short)
			}
		}
	}
	for _, s := range sections {
		set := pflag.NewFlagSet(s.Title, pflag.ContinueOnError)
		for _, n := range s.Names {
			set.AddFlag(c.Flags().Lookup(n))
		}
		fmt.Fprintf(w, "\n%s:\n%s", s.Title, set.FlagUsagesWrapped(120))
	}
	fmt.Fprintln(w, "\nCluster Autoscaler's other flags are accepted without effect and not listed: docs/ca-flags.md.")
}

// FlagError adds to an unknown flag's error the flags of close spelling;
// a cobra flag error function.
func FlagError(c *cobra.Command, err error) error {
	name, ok := unknownFlag(err)
	if !ok {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest(name, names); len(s) > 0 {
		return fmt.Errorf("%w; did you mean --%s?", err, strings.Join(s, " or --"))
	}
	return err
}

// unknownFlag is the name in pflag's "unknown flag: --name".
func unknownFlag(err error) (string, bool) {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	return name, ok && name != ""
}

// noArgs refuses arguments, suggesting a subcommand of close spelling.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if s := suggest(args[0], names); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}

// suggest lists the names within a few edits of typed (a third of its
// length, at least 1, at most 3), or that it is a prefix of, closest first.
func suggest(typed string, names []string) []string {
	limit := min(max(len(typed)/3, 1), 3)
	type hit struct {
		name string
		d    int
	}
	var hits []hit
	for _, n := range names {
		d := editDistance(strings.ToLower(typed), n)
		if d <= limit || (len(typed) >= 3 && strings.HasPrefix(n, typed)) {
			hits = append(hits, hit{n, d})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.d - b.d })
	var out []string
	for _, h := range hits[:min(len(hits), 3)] {
		out = append(out, h.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
