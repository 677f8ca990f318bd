package clustermove

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// ResourceDigest sums the objects of one resource prefix of a cluster.
type ResourceDigest struct {
	// Count is the number of objects.
	Count int `json:"count"`
	// Hash is the hex SHA-256 of the objects' keys and values in key order.
	Hash string `json:"hash"`
}

// Digest sums entries per resource prefix (storage.ClusterKey.Resource).
// Entries whose key is not of a logical cluster's object are an error.
func Digest(entries []Entry) (map[string]ResourceDigest, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	byResource := map[string][]Entry{}
	for _, e := range sorted {
		k, ok := kstorage.SplitClusterKey(e.Key)
		if !ok {
			return nil, fmt.Errorf("digest: %q is not the key of an object of a logical cluster", e.Key)
		}
		byResource[k.Resource] = append(byResource[k.Resource], e)
	}
	out := make(map[string]ResourceDigest, len(byResource))
	for resource, es := range byResource {
		h := sha256.New()
		var n [8]byte
		for _, e := range es {
			// Length prefixes keep key and value boundaries unambiguous.
			binary.BigEndian.PutUint64(n[:], uint64(len(e.Key)))
			h.Write(n[:])
			h.Write([]byte(e.Key))
			binary.BigEndian.PutUint64(n[:], uint64(len(e.Value)))
			h.Write(n[:])
			h.Write(e.Value)
		}
		out[resource] = ResourceDigest{Count: len(es), Hash: hex.EncodeToString(h.Sum(nil))}
	}
	return out, nil
}

// Verify compares the digests of the origin and of the destination and
// describes every resource that differs, nil when all match.
func Verify(origin, destination map[string]ResourceDigest) error {
	var diffs []string
	for _, resource := range unionKeys(origin, destination) {
		o, d := origin[resource], destination[resource]
		switch {
		case o.Count != d.Count:
			diffs = append(diffs, fmt.Sprintf("%s: %d objects on the origin, %d on the destination", resource, o.Count, d.Count))
		case o.Hash != d.Hash:
			diffs = append(diffs, fmt.Sprintf("%s: %d objects on both, but their contents differ", resource, o.Count))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the copy differs from the origin: %s", strings.Join(diffs, "; "))
	}
	return nil
}

func unionKeys(a, b map[string]ResourceDigest) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// DifferingKeys names up to max keys whose values differ between origin
// and destination or that only one of them holds, in key order: what a
// failed verification tells.
func DifferingKeys(origin, destination []Entry, max int) []string {
	values := make(map[string][]byte, len(destination))
	for _, e := range destination {
		values[e.Key] = e.Value
	}
	var keys []string
	for _, e := range origin {
		v, ok := values[e.Key]
		if !ok || !bytes.Equal(v, e.Value) {
			keys = append(keys, e.Key)
		}
		delete(values, e.Key)
	}
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > max {
		keys = keys[:max]
	}
	return keys
}
