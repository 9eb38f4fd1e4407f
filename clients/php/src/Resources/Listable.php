<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Page;

/**
 * list() (one page), pages() and all() (generators over every page / item) for
 * a resource whose list lives at static::PATH. Pass `page` (with `limit`) for
 * page mode; without it the list is walked in cursor mode.
 */
trait Listable
{
    /** @param array<string, mixed> $params limit, page or cursor, and the list's filters */
    public function list(array $params = []): Page
    {
        return $this->page(static::PATH, $params);
    }

    /**
     * @param array<string, mixed> $params
     * @return \Generator<int, Page>
     */
    public function pages(array $params = []): \Generator
    {
        return $this->walkPages(static::PATH, $params);
    }

    /**
     * @param array<string, mixed> $params
     * @return \Generator<int, array<string, mixed>>
     */
    public function all(array $params = []): \Generator
    {
        return $this->walkItems(static::PATH, $params);
    }
}
