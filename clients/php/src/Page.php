<?php
declare(strict_types=1);

namespace Mailbolt;

/**
 * One page of a list: items() and, in cursor mode, hasMore() and cursor();
 * in page mode, page(), total() and the Link header's links().
 */
final class Page extends Response
{
    /** @return list<mixed> */
    public function items(): array
    {
        $data = $this->toArray()['data'] ?? [];
        return is_array($data) ? array_values($data) : [];
    }

    /** Cursor mode: whether another page follows. Page mode: whether a rel="next" link exists. */
    public function hasMore(): bool
    {
        $d = $this->toArray();
        if (array_key_exists('has_more', $d)) {
            return (bool) $d['has_more'];
        }
        return isset($this->links()['next']);
    }

    /** Cursor mode: the cursor of the next page; null on the last page. */
    public function cursor(): ?string
    {
        $c = $this->toArray()['cursor'] ?? null;
        return is_string($c) && $c !== '' ? $c : null;
    }

    public function page(): ?int
    {
        $p = $this->toArray()['page'] ?? null;
        return is_int($p) ? $p : null;
    }

    public function total(): ?int
    {
        $t = $this->toArray()['total'] ?? null;
        return is_int($t) ? $t : null;
    }

    /** @return array<string, string> rel => URL (relative: path and query) from the Link header */
    public function links(): array
    {
        $links = [];
        $header = $this->header('Link');
        if ($header === null) {
            return $links;
        }
        foreach (preg_split('/,(?=\s*<)/', $header) ?: [] as $part) {
            if (preg_match('/<([^>]*)>\s*(.*)$/s', trim($part), $m) !== 1) {
                continue;
            }
            if (preg_match('/rel\s*=\s*"?([^";]+)"?/i', $m[2], $r) === 1) {
                foreach (preg_split('/\s+/', trim($r[1])) ?: [] as $rel) {
                    $links[strtolower($rel)] = $m[1];
                }
            }
        }
        return $links;
    }

    /** Page mode: the query parameters of the rel="next" link; null on the last page. */
    public function nextPageQuery(): ?array
    {
        $next = $this->links()['next'] ?? null;
        if ($next === null) {
            return null;
        }
        $query = [];
        parse_str((string) parse_url($next, PHP_URL_QUERY), $query);
        return $query;
    }
}
