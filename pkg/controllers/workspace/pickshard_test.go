package workspace

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
)

// staticShards is a shardlookup.Source over a fixed list.
type staticShards []*corev1alpha1.Shard

func (s staticShards) Get(name string) (*corev1alpha1.Shard, error) {
	for _, sh := range s {
		if sh.Name == name {
			return sh, nil
		}
	}
	return nil, nil
}

func (s staticShards) List() ([]*corev1alpha1.Shard, error) { return s, nil }

func TestPickShardFollowsTheLocationSelector(t *testing.T) {
	shard := func(name, region string) *corev1alpha1.Shard {
		return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}}}
	}
	c := &Controller{shards: staticShards{shard("alpha", "eu"), shard("beta", "us")}}
	ws := func(selector *metav1.LabelSelector) *tenancyv1alpha1.Workspace {
		w := &tenancyv1alpha1.Workspace{}
		if selector != nil {
			w.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: selector}
		}
		return w
	}

	got, err := c.pickShard(ws(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}))
	if err != nil || got == nil || got.Name != "beta" {
		t.Errorf("region=us: got %v, %v; want beta", got, err)
	}
	got, err = c.pickShard(ws(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "ap"}}))
	if err != nil || got != nil {
		t.Errorf("region=ap: got %v, %v; want no shard and no error", got, err)
	}
	if got, err = c.pickShard(ws(nil)); err != nil || got == nil {
		t.Errorf("no selector: got %v, %v; want one of the shards", got, err)
	}

	// An invalid selector is reported as such, not as "no shard matches".
	_, err = c.pickShard(ws(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}}))
	var invalid invalidSelectorError
	if !errors.As(err, &invalid) {
		t.Fatalf("invalid selector: got %v, want an invalidSelectorError", err)
	}
	if want := "invalid spec.location.selector"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("message %q does not start with %q", err, want)
	}
}
