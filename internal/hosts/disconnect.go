package hosts

import (
	"fmt"
	"os"
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
// connect wrote it, each it removed that is still absent (at the end of
// its map), and removes each it added that is still as it wrote it,
// noting the others in res.
func (s Store) restoreEntries(o *Opened, rec *Record, res *Restore) ([]byte, error) {
	doc, err := parse(o.File.Format, o.Data)
	if err != nil {
		return nil, err
	}
	for i := len(rec.Rounds) - 1; i >= 0; i-- {
		for _, c := range rec.Rounds[i].Changes {
			ref := fmt.Sprintf("%q in %s", c.Name, where(c.Keys))
			sm, ok := o.mapAt(c.Keys)
			if !ok {
				res.Kept = append(res.Kept, ref+": not a map of servers of this file")
				continue
			}
			cur, err := o.lookup(doc, c.Keys, c.Name)
			if err != nil {
				return nil, err
			}
			switch {
			case c.Written == "" && cur != nil: // removed by connect
				res.Kept = append(res.Kept, ref+": added again since connect; kept as it is")
			case c.Written == "":
				e, err := doc.insert(c.Keys, sm.list, c.Name, nil)
				if err == nil {
					err = doc.restore(e, c.Original)
				}
				if err != nil {
					return nil, fmt.Errorf("put back server %s: %w", ref, err)
				}
				res.Restored = append(res.Restored, ref)
			case cur == nil:
				res.Kept = append(res.Kept, ref+": removed since connect; not added back")
			case !sameText(o.File.Format, cur.text, c.Written):
				res.Kept = append(res.Kept, ref+": changed since connect; kept as it is")
			case c.Original == "": // added by connect
				if err := doc.remove(cur); err != nil {
					return nil, err
				}
				res.Restored = append(res.Restored, ref)
			default:
				if err := doc.restore(cur, c.Original); err != nil {
					return nil, err
				}
				res.Restored = append(res.Restored, ref)
			}
		}
	}
	return doc.bytes(), nil
}
