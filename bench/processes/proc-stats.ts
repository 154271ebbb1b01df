import { readdirSync, readFileSync } from 'node:fs'

/**
 * CPU and memory of the processes under test, from /proc (Linux). Every figure is of
 * a process tree, the pid and its descendants: nginx answers from a worker its master
 * forked, and a gateway may fork workers (node:cluster), so the process the bench
 * started is not always the one doing the work.
 */

/** USER_HZ is 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100

/** The fields of /proc/<pid>/stat after the command name, which may hold spaces: fields[0] is field 3 (state). */
function statFields (pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null // exited between the listing and the read
  }
}

/** `pid` and every live descendant of it. */
export function processTree (pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const parent = Number(statFields(Number(entry))?.[1] ?? NaN) // field 4: ppid
    if (!Number.isInteger(parent)) continue
    const siblings = children.get(parent) ?? []
    siblings.push(Number(entry))
    children.set(parent, siblings)
  }
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []))
  return tree
}

/** CPU seconds (user + system) one live process has used so far. */
export function cpuSecondsOf (pid: number): number {
  const fields = statFields(pid)
  if (fields === null) throw new Error(`process ${pid} is gone`)
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND // utime, stime (fields 14 and 15)
}

/**
 * CPU seconds a process tree has used so far: its live processes' own time plus what
 * they reaped of children that exited (cutime, cstime), so a worker that is replaced
 * mid-run is still counted once its parent has waited for it.
 */
export function treeCpuSecondsOf (pid: number): number {
  let ticks = 0
  for (const member of processTree(pid)) {
    const fields = statFields(member)
    if (fields === null) continue
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
  }
  return ticks / CLOCK_TICKS_PER_SECOND
}

function memoryOfOne (pid: number): { rssMiB: number, peakRssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 }
}

/**
 * Resident memory of a process tree now, and the sum of its processes' peaks (each
 * process's VmHWM: the peaks need not have been at the same time, so this bounds the
 * tree's peak from above).
 */
export function memoryOf (pid: number): { rssMiB: number, peakRssMiB: number } {
  let rssMiB = 0
  let peakRssMiB = 0
  for (const member of processTree(pid)) {
    try {
      const one = memoryOfOne(member)
      rssMiB += one.rssMiB
      peakRssMiB += one.peakRssMiB
    } catch {
      // exited between the listing and the read
    }
  }
  return { rssMiB, peakRssMiB }
}
