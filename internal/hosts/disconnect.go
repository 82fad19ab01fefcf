package hosts

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// A Restore is what disconnect did to one host file.
type Restore struct {
	Path string
	// Whole is set when the file was put back byte for byte.
	Whole bool
	// Restored are the entries put back one by one; Kept those left as
	// the user changed them since connect, with why.
	Restored []string
	Kept     []string
	// Before and After are the file's content before and after.
	Before, After []byte
}

// Disconnect undoes what connect did to o's file (o as read now): the
// backup byte for byte when the file is as connect left it, else each
// entry connect rewrote that still reads as connect wrote it. With dryRun
// it changes nothing. It returns nil when connect never changed the file.
func (s Store) Disconnect(o *Opened, dryRun bool, now time.Time) (*Restore, error) {
	rec, err := s.Record(o.File.Path)
	if err != nil || rec == nil {
		return nil, err
	}
	res := &Restore{Path: o.File.Path, Before: o.Data}
	if whole, ok := s.wholeBackup(rec, o.Data); ok {
		res.Whole, res.After = true, whole
	} else if res.After, err = s.restoreEntries(o, rec, res); err != nil {
		return nil, err
	}
	if dryRun {
		return res, nil
	}
	if string(res.After) != string(o.Data) {
		fi, err := os.Stat(o.File.Path)
		if err != nil {
			return nil, err
		}
		if err := Writable(o.File.Path); err != nil {
			return nil, err
		}
		if _, err := s.backup(o.Host.ID, o.File.Path, o.Data, now); err != nil {
			return nil, err
		}
		if err := WriteAtomic(o.File.Path, res.After, fi.Mode().Perm(), fi); err != nil {
			return nil, err
		}
	}
	return res, s.dropRecord(o.File.Path)
}

// wholeBackup returns the file as it was before the first connect when
// nobody changed it since: each round began where the one before ended,
// and the file is as the last left it.
func (s Store) wholeBackup(rec *Record, cur []byte) ([]byte, bool) {
	if len(rec.Rounds) == 0 || digest(cur) != rec.Rounds[len(rec.Rounds)-1].After {
		return nil, false
	}
	for i := 1; i < len(rec.Rounds); i++ {
		if rec.Rounds[i].Before != rec.Rounds[i-1].After {
			return nil, false
		}
	}
	data, err := os.ReadFile(rec.Rounds[0].Backup)
	if err != nil || digest(data) != rec.Rounds[0].Before {
		return nil, false
	}
	return data, true
}

// restoreEntries puts back each entry connect rewrote that is still as
// connect wrote it, noting the others in res.
func (s Store) restoreEntries(o *Opened, rec *Record, res *Restore) ([]byte, error) {
	doc, err := parse(o.File.Format, o.Data)
	if err != nil {
		return nil, err
	}
	fresh, err := o.entriesOf(doc)
	if err != nil {
		return nil, err
	}
	for i := len(rec.Rounds) - 1; i >= 0; i-- {
		for _, c := range rec.Rounds[i].Changes {
			ref := fmt.Sprintf("%q in %s", c.Name, where(c.Keys))
			idx := slices.IndexFunc(fresh, func(e *entry) bool { return e.name == c.Name && slices.Equal(e.keys, c.Keys) })
			switch {
			case idx < 0:
				res.Kept = append(res.Kept, ref+": removed since connect; not added back")
			case !sameText(o.File.Format, fresh[idx].text, c.Written):
				res.Kept = append(res.Kept, ref+": changed since connect; kept as it is")
			default:
				if err := doc.restore(fresh[idx], c.Original); err != nil {
					return nil, err
				}
				res.Restored = append(res.Restored, ref)
			}
		}
	}
	return doc.bytes(), nil
}
