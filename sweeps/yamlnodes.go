package sweeps

// YAML nodes as the W&B import (wandb*.go) builds and edits them: a manifest written as
// nodes keeps the base manifest's comments and order.

import (
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// plain is a scalar written as it is, which reads as a number, a bool or a string.
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

// quoted is a string scalar: written in quotes where it would read as something else.
func quoted(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// numberNode is v written so that it reads back as the same float64.
func numberNode(v float64) *yaml.Node { return plain(strconv.FormatFloat(v, 'g', -1, 64)) }

// flowSeq is an empty sequence, written on one line: [a, b].
func flowSeq() *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle} }

// lookup is the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey puts key: v in mapping m: in place of the key's value, without the comments that
// described the old one, or else at the end.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Value == key {
			k.HeadComment, k.LineComment, k.FootComment = "", "", ""
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, quoted(key), v)
}

// delKey removes key from mapping m.
func delKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// cloneNode is a deep copy of n.
func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}
