package app

import (
	"fmt"

	"github.com/spf13/cobra"
)

// localBinaryHint says where `tidal local` went: the embedded cluster it
// runs links kube-apiserver, etcd, the controllers and kwok, which the
// production binary leaves out.
const localBinaryHint = "tidal local is not part of this binary, which leaves out the embedded Kubernetes control plane; " +
	"it is the tidal-local binary: `make run`, or `go build -o bin/tidal-local ./cmd/tidal-local` " +
	"and then `bin/tidal-local` with the same flags"

// newLocalStub is `tidal local` in the production binary: it takes any
// flags and answers with localBinaryHint.
func newLocalStub() *cobra.Command {
	return &cobra.Command{
		Use:                "local",
		Short:              "Moved to the tidal-local binary (make run)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("%s", localBinaryHint)
		},
	}
}
