# evp-data filter: keep the stanzas of hwaf's algorithms (see evp-data.sh).
# In: one evp_test data file.  Out (stdout): its stanzas for hwaf's
# algorithms, blank-line separated; to the file named by `left`: one line
# per other stanza, "FILE:LINE TYPE = NAME: REASON".
function upper(s) { return toupper(s) }
function hwaf_cipher(n) {
    n = upper(n)
    return n ~ /^AES-(128|192|256)-(CBC|CTR|GCM)$/ || n ~ /^AES-(128|256)-XTS$/ ||
           n ~ /^ID-AES(128|192|256)-GCM$/
}
function hwaf_digest(n) {
    n = upper(n)
    return n ~ /^SHA-?1$/ || n ~ /^SHA2?-?(224|256|384|512)$/
}
function flush(   keep, why) {
    if (nlines == 0)
        return
    if (type == "") {
        # comments, Title and the like only: kept as they are
        keep = 1
    } else if (type == "Cipher") {
        keep = hwaf_cipher(name); why = "not an algorithm hwaf offers"
    } else if (type == "Digest") {
        keep = hwaf_digest(name); why = "not an algorithm hwaf offers"
    } else if (type == "MAC") {
        keep = upper(name) == "HMAC" && hwaf_digest(alg)
        why = upper(name) == "HMAC" ? "HMAC over " alg ", a digest hwaf does not offer" : "not an algorithm hwaf offers"
    } else {
        keep = 0; why = "not a cipher, digest or MAC test"
    }
    if (keep && fips) {
        keep = 0; hwafskip = 1
        why = "Availablein = fips: for OpenSSL's FIPS provider only (evp_test skips it elsewhere)"
    }
    if (keep) {
        for (i = 1; i <= nlines; i++)
            print lines[i]
        print ""
        if (type != "")
            kept++
    } else {
        printf "%s:%d %s = %s%s: %s%s\n", FILENAME, start, type, name,
            (alg != "" ? " (" alg ")" : ""), why, (hwafskip ? " [hwaf algorithm]" : "") > left
    }
    nlines = 0; type = ""; name = ""; alg = ""; fips = 0; hwafskip = 0
}
/^[ \t]*$/ { flush(); next }
{
    if (nlines == 0)
        start = FNR
    lines[++nlines] = $0
    if ($0 ~ /^#/)
        next
    k = $0; sub(/[ \t]*=.*/, "", k)
    v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
    # The test's kind is its first key other than these (as in evp_test).
    if (type == "" && k != "Title" && k != "Availablein" && k != "FIPSversion") {
        type = k
        name = v
    }
    if (k == "Algorithm")
        alg = v
    if (k == "Availablein" && v ~ /fips/ && v !~ /default/)
        fips = 1
}
END { flush(); printf "%d\n", kept > counts }
