package etcd

import "github.com/wfstore/wfstore/internal/kvlayout"

// This file is the key layout: the key spaces under a store's prefix.
// Every key of a store is
//
//	prefix | tag | rest
//
// where tag is one byte naming the space (a record kind, an index, the
// meta keys or the commit markers) and rest is a codec key for records
// and index entries. So each record kind and each index is one contiguous
// key range, read in key order by a bounded range request. The record
// kinds and indexes, their tags, keys and values are kvlayout's, in its
// flat form (prefix | kvlayout's stored key), without the run status index.

// Space tags of the adapter's own keys.
const (
	tagMeta   byte = 'm' // meta keys: store marker, schema version, the turn queue
	tagMarker byte = 'x' // commit markers: instance | slot (tx.go)
	tagClaim  byte = 'c' // advisory claims: claim key (claims.go)
)

// layout is the etcd store's: every kind and index the flat key range of
// its tag.
var layout = kvlayout.New(kvlayout.Config{Name: "etcd"})
