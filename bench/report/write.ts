import { access, mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { BenchResult } from './types.js'
import { utcDate, utcTime } from './format.js'
import { renderMarkdown } from './markdown.js'
import { renderSvg } from './svg.js'

/**
 * Writes one run's JSON, Markdown report and SVG chart into the results folder, plus
 * `latest.*` copies the README can link by a stable path.
 *
 * Files are named by the run's start date in UTC (`2026-03-02.json`); a second run
 * the same day adds its start time (`2026-03-02-141503.json`), and a third in the same
 * second a counter, so no run overwrites another. Every file is written to `*.tmp` and
 * renamed, so a reader (or an interrupted run) never sees half a report.
 */

/** Base name of the copies of the newest run. */
export const LATEST_NAME = 'latest'

export interface ReportPaths {
  json: string
  markdown: string
  svg: string
}

const EXTENSIONS = { json: 'json', markdown: 'md', svg: 'svg' } as const

async function exists (path: string): Promise<boolean> {
  try {
    await access(path)
    return true
  } catch {
    return false
  }
}

async function anyExists (dir: string, stamp: string): Promise<boolean> {
  for (const extension of Object.values(EXTENSIONS)) {
    if (await exists(join(dir, `${stamp}.${extension}`))) return true
  }
  return false
}

/** The first of `YYYY-MM-DD`, `YYYY-MM-DD-HHMMSS`, `YYYY-MM-DD-HHMMSS-2`, … no file in `dir` uses. */
async function chooseStamp (result: BenchResult, dir: string): Promise<string> {
  const day = utcDate(result.startedAt)
  if (!await anyExists(dir, day)) return day
  const timed = `${day}-${utcTime(result.startedAt).replaceAll(':', '')}`
  if (!await anyExists(dir, timed)) return timed
  for (let counter = 2; ; counter++) {
    const stamp = `${timed}-${counter}`
    if (!await anyExists(dir, stamp)) return stamp
  }
}

function pathsFor (dir: string, name: string): ReportPaths {
  return {
    json: join(dir, `${name}.${EXTENSIONS.json}`),
    markdown: join(dir, `${name}.${EXTENSIONS.markdown}`),
    svg: join(dir, `${name}.${EXTENSIONS.svg}`)
  }
}

async function writeAtomically (path: string, content: string): Promise<void> {
  const temporary = `${path}.tmp`
  try {
    await writeFile(temporary, content, 'utf8')
    await rename(temporary, path)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

async function writeSet (paths: ReportPaths, content: Record<keyof ReportPaths, string>): Promise<void> {
  // the chart before the report that links it, the JSON first as the record of the run
  await writeAtomically(paths.json, content.json)
  await writeAtomically(paths.svg, content.svg)
  await writeAtomically(paths.markdown, content.markdown)
}

/**
 * Writes `<dir>/<stamp>.json|.md|.svg` and their `latest.*` copies (`dir` is created
 * if needed); the report embeds its chart by relative name, so the copy works too.
 * Resolves to the paths of the dated files.
 */
export async function writeReports (result: BenchResult, dir: string): Promise<ReportPaths> {
  await mkdir(dir, { recursive: true })
  const stamp = await chooseStamp(result, dir)
  // everything is rendered before anything is written: a rendering error leaves the folder as it was
  const content = {
    json: `${JSON.stringify(result, null, 2)}\n`,
    markdown: renderMarkdown(result, { chartPath: `${stamp}.${EXTENSIONS.svg}` }),
    svg: renderSvg(result)
  }
  const paths = pathsFor(dir, stamp)
  await writeSet(paths, content)
  await writeSet(pathsFor(dir, LATEST_NAME), content)
  return paths
}
