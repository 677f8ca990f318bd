package drain

import (
	"sync"
	"time"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
)

// createdTTL is how long a created migration the informer does not show
// is counted: past it, it was deleted before the informer saw it.
const createdTTL = time.Minute

// created remembers the migrations a drain created until its informer
// shows them: the informer reads the cache server's replicas, which come
// later, and a reconcile meanwhile must count them against max-moves.
type created struct {
	mu     sync.Mutex
	byName map[string]createdMigration
}

type createdMigration struct {
	migration *migrationv1alpha1.LogicalClusterMigration
	at        time.Time
}

// add notes that m was created (or found created) at now.
func (c *created) add(m *migrationv1alpha1.LogicalClusterMigration, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byName == nil {
		c.byName = map[string]createdMigration{}
	}
	c.byName[m.Name] = createdMigration{migration: m, at: now}
}

// merge returns seen, the informer's migrations, and the created ones it
// lacks; it forgets those it has and those created before now-createdTTL.
func (c *created) merge(seen []*migrationv1alpha1.LogicalClusterMigration, now time.Time) []*migrationv1alpha1.LogicalClusterMigration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := seen
	for _, m := range seen {
		delete(c.byName, m.Name)
	}
	for name, cm := range c.byName {
		if now.Sub(cm.at) > createdTTL {
			delete(c.byName, name)
			continue
		}
		out = append(out, cm.migration)
	}
	return out
}
