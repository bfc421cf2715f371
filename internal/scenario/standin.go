package scenario

import (
	"context"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
)

// StartKruiseManager gives a cluster from ClusterOptions the shop's nodes (all Ready, run by kwok)
// and namespaces and the kruise-manager stand-in, without the shop's workloads: for tests that
// make their own CloneSets and watch the stand-in roll them out. The stand-in runs until ctx ends.
func StartKruiseManager(ctx context.Context, env Env) (*kruisemanager.Manager, error) {
	b := newBuilder(env)
	shop := &Shop{}
	if err := b.infrastructure(ctx, shop); err != nil {
		return nil, err
	}
	if err := b.kruiseManager(ctx, shop); err != nil {
		return nil, err
	}
	return shop.Manager, nil
}
