package collect

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Every read the collector makes rides out transient faults (pkg/fault decides which): a single
// GET or unpaged LIST is sent again whole; a paged list asks again for the page that failed, and
// starts over when its continue token expired; a stream broken mid-list resumes from its last
// continue token, skipping the items it had already handed on, or starts over when unpaged.
// Nothing is sent twice when nothing fails.

// maxRestarts bounds how often one list starts over because its continue token expired.
const maxRestarts = 2

// expired reports whether a list's continue token is too old to resume from (410).
func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// get sends one read with retries and returns what it read.
func get[T any](ctx context.Context, col *collector, read func(context.Context) (T, error)) (T, error) {
	var out T
	err := col.retry.Do(ctx, func(ctx context.Context) error {
		var err error
		out, err = read(ctx)
		return err
	})
	return out, err
}
