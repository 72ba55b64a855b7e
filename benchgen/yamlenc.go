package benchgen

import (
	"bytes"
	"fmt"
)

// yamlError is a constant error of the YAML encoder.
type yamlError string

func (e yamlError) Error() string { return string(e) }

// errBadJSON reports input that is not the compact JSON of json.Marshal.
const errBadJSON = yamlError("yaml item: malformed JSON")

// yamlItem converts one compact JSON object (as produced by json.Marshal)
// into the block-style YAML of a sequence element ("- " before the first
// key), appending it to out. Field order is kept. Strings are written plain
// only when they cannot be read back as anything but the same string, and
// otherwise as the JSON string itself, which is a valid YAML double-quoted
// scalar.
func yamlItem(out, js []byte) ([]byte, error) {
	e := yamlEncoder{js: js, out: out}
	if !e.accept('{') {
		return out, errBadJSON
	}
	e.out = append(e.out, "- "...)
	if err := e.mapping(2, true); err != nil {
		return out, err
	}
	if e.pos != len(js) {
		return out, errBadJSON
	}
	return e.out, nil
}

// yamlEncoder writes YAML while scanning compact JSON.
type yamlEncoder struct {
	js  []byte
	pos int
	out []byte
}

// peek returns the next input byte, or 0 at the end.
func (e *yamlEncoder) peek() byte {
	if e.pos < len(e.js) {
		return e.js[e.pos]
	}
	return 0
}

// accept consumes c if it is the next byte.
func (e *yamlEncoder) accept(c byte) bool {
	if e.peek() == c {
		e.pos++
		return true
	}
	return false
}

// mapping writes the members of an object whose '{' was read, at indent.
// With inline the first key goes on the current line (after "- ").
func (e *yamlEncoder) mapping(indent int, inline bool) error {
	if e.accept('}') {
		e.out = append(e.out, "{}\n"...)
		return nil
	}
	for first := true; ; first = false {
		key, err := e.str()
		if err != nil || !e.accept(':') {
			return errBadJSON
		}
		if !first || !inline {
			e.indent(indent)
		}
		e.out = appendYAMLString(e.out, key)
		e.out = append(e.out, ':')
		if err := e.member(indent); err != nil {
			return err
		}
		if !e.accept(',') {
			break
		}
	}
	if !e.accept('}') {
		return errBadJSON
	}
	return nil
}

// member writes the value of a mapping key at indent.
func (e *yamlEncoder) member(indent int) error {
	switch {
	case e.accept('{'):
		if e.peek() == '}' {
			e.out = append(e.out, ' ')
		} else {
			e.out = append(e.out, '\n')
		}
		return e.mapping(indent+2, false)
	case e.accept('['):
		if e.peek() == ']' {
			e.out = append(e.out, ' ')
		} else {
			e.out = append(e.out, '\n')
		}
		return e.sequence(indent)
	}
	e.out = append(e.out, ' ')
	return e.scalar()
}

// sequence writes the elements of an array whose '[' was read, at indent.
func (e *yamlEncoder) sequence(indent int) error {
	if e.accept(']') {
		e.out = append(e.out, "[]\n"...)
		return nil
	}
	for {
		e.indent(indent)
		e.out = append(e.out, "- "...)
		if err := e.element(indent); err != nil {
			return err
		}
		if !e.accept(',') {
			break
		}
	}
	if !e.accept(']') {
		return errBadJSON
	}
	return nil
}

// element writes one sequence element after its "- ".
func (e *yamlEncoder) element(indent int) error {
	switch {
	case e.accept('{'):
		return e.mapping(indent+2, true)
	case e.accept('['):
		if e.peek() != ']' {
			e.out = append(e.out, '\n')
		}
		return e.sequence(indent + 2)
	}
	return e.scalar()
}

// scalar writes a string, number, boolean or null and ends the line.
func (e *yamlEncoder) scalar() error {
	if e.peek() == '"' {
		s, err := e.str()
		if err != nil {
			return err
		}
		e.out = append(appendYAMLString(e.out, s), '\n')
		return nil
	}
	end := e.pos
	for end < len(e.js) && bytes.IndexByte([]byte(",}]"), e.js[end]) < 0 {
		end++
	}
	if end == e.pos {
		return fmt.Errorf("%w at offset %d", errBadJSON, e.pos)
	}
	e.out = append(append(e.out, e.js[e.pos:end]...), '\n')
	e.pos = end
	return nil
}

// str consumes a JSON string and returns it with its quotes and escapes.
func (e *yamlEncoder) str() ([]byte, error) {
	start := e.pos
	if !e.accept('"') {
		return nil, errBadJSON
	}
	for e.pos < len(e.js) {
		switch e.js[e.pos] {
		case '\\':
			e.pos += 2
		case '"':
			e.pos++
			return e.js[start:e.pos], nil
		default:
			e.pos++
		}
	}
	return nil, errBadJSON
}

// indent writes n spaces.
func (e *yamlEncoder) indent(n int) {
	for range n {
		e.out = append(e.out, ' ')
	}
}

// appendYAMLString writes the JSON string quoted plain when that is
// unambiguous, else as is: a JSON string is a valid YAML double-quoted
// scalar (its escapes are YAML escapes).
func appendYAMLString(out, quoted []byte) []byte {
	if inner := quoted[1 : len(quoted)-1]; plainSafe(inner) {
		return append(out, inner...)
	}
	return append(out, quoted...)
}

// plainSafe reports whether s reads back as the same string when written
// as a plain YAML scalar: a letter first, then letters, digits and _./-,
// and not one of YAML 1.1's boolean or null words.
func plainSafe(s []byte) bool {
	if len(s) == 0 || !isLetter(s[0]) {
		return false
	}
	for _, c := range s[1:] {
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '/' && c != '-' {
			return false
		}
	}
	switch string(bytes.ToLower(s)) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
