package act

import (
	"context"
	"fmt"
)

// bounded runs a cloud call and returns its error, or the context's once
// it ends first: a provider that hangs and ignores its context still lets
// the iteration go on at its deadline, and the call counts as failed. The
// call itself goes on in the background until the provider returns.
func bounded(ctx context.Context, what string, call func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		select {
		case err := <-done:
			// It answered as the deadline came: its answer holds.
			return err
		default:
		}
		return fmt.Errorf("%s: no answer from the cloud provider: %w", what, context.Cause(ctx))
	}
}
