<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Client;
use Mailbolt\Page;
use Mailbolt\Response;

/** The shared plumbing of the resource groups ($client->messages, $client->domains, …). */
abstract class Resource
{
    public function __construct(protected readonly Client $client)
    {
    }

    protected static function seg(string $value): string
    {
        return rawurlencode($value);
    }

    /**
     * @param array<string, mixed> $query
     * @param array<string, mixed> $options idempotency_key, headers
     */
    protected function call(string $method, string $path, array $query = [], array|object|null $body = null, array $options = []): Response
    {
        return $this->client->request($method, $path, $query, $body, $options);
    }

    /** @param array<string, mixed> $params */
    protected function page(string $path, array $params = []): Page
    {
        $page = $this->client->request('GET', $path, $params, null, ['page' => true]);
        assert($page instanceof Page);
        return $page;
    }

    /**
     * Every page of a list, from the one $params selects to the last. With
     * `page` in $params it walks page mode (the Link header's rel="next"),
     * otherwise cursor mode (`cursor` until `has_more` is false).
     *
     * @param array<string, mixed> $params
     * @return \Generator<int, Page>
     */
    protected function walkPages(string $path, array $params = []): \Generator
    {
        $pageMode = isset($params['page']) && $params['page'] !== '';
        while (true) {
            $page = $this->page($path, $params);
            yield $page;
            if ($pageMode) {
                $next = $page->nextPageQuery();
                if ($next === null || $page->items() === []) {
                    return;
                }
                $params = $next;
            } else {
                $cursor = $page->cursor();
                if (!$page->hasMore() || $cursor === null) {
                    return;
                }
                $params['cursor'] = $cursor;
            }
        }
    }

    /**
     * Every item of a list, across all its pages (see walkPages()).
     *
     * @param array<string, mixed> $params
     * @return \Generator<int, mixed>
     */
    protected function walkItems(string $path, array $params = []): \Generator
    {
        foreach ($this->walkPages($path, $params) as $page) {
            foreach ($page->items() as $item) {
                yield $item;
            }
        }
    }
}
