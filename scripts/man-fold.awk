# Folds the text lines of a roff page to 80 bytes (mandoc's style limit), at spaces, outside
# no-fill blocks: in fill mode a line break is a space. A piece never starts with a space (a
# break in roff) or a control character, and no break follows a sentence's end (roff would widen
# it). The line after .TP is a tag, one line by definition: it is left whole.
/^\.nf/ { nofill = 1 }
/^\.fi/ { nofill = 0 }
{
    line = $0
    tag = previous == ".TP"
    previous = line
    if (nofill || tag || line ~ /^[.']/ || length(line) <= 80) { print line; next }
    while (length(line) > 80) {
        cut = 0
        for (i = 80; i > 1; i--) {
            if (substr(line, i, 1) == " " && substr(line, i - 1, 1) !~ /[\\.?! ]/ && substr(line, i + 1, 1) != " ") { cut = i; break }
        }
        if (!cut) break
        print substr(line, 1, cut - 1)
        line = substr(line, cut + 1)
        if (line ~ /^[.']/) line = "\\&" line
    }
    print line
}
