package sweeps

// A manifest's errors, and where they stand in it: the line of a field, the field of a line.

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fieldAt is the path ("optimizers[1].lr") of the deepest field whose key or value
// stands on line of the document: the inverse of lineOf.
func fieldAt(root *yaml.Node, line int) string {
	best := "manifest"
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if c.Kind != yaml.ScalarNode {
					walk(c, fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
	}
	walk(root, "")
	return best
}

// lineOf returns the line of the field at path ("optimizers[1].lr") in the document, or
// of its deepest existing ancestor.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		key, idxs := part, []int(nil) // betas[1][0]: key betas, indices 1, 0
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			key = part[:i]
			for ix := range strings.SplitSeq(part[i+1:len(part)-1], "][") {
				v, err := strconv.Atoi(ix)
				if err != nil {
					break
				}
				idxs = append(idxs, v)
			}
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		for _, idx := range idxs {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}
