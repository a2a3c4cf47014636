//! `FileMutationQueue`: FIFO per file, symlink aliases share a queue, different
//! files run concurrently, failures do not break the chain.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_tool::{FileMutationQueue, queue_key};

#[tokio::test]
async fn same_file_runs_fifo_and_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "x").unwrap();
    let queue = FileMutationQueue::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let active = Arc::new(Mutex::new(0usize));
    let mut handles = Vec::new();
    for i in 0..10 {
        let (q, p, order, active) = (queue.clone(), path.clone(), order.clone(), active.clone());
        handles.push(tokio::spawn(async move {
            q.run(&p, async {
                {
                    let mut a = active.lock().unwrap();
                    *a += 1;
                    assert_eq!(*a, 1, "two operations on one file overlapped");
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                order.lock().unwrap().push(i);
                *active.lock().unwrap() -= 1;
            })
            .await
            .unwrap();
        }));
        // Give each task time to register so the asking order is known.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for h in handles {
        h.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(queue.active_keys(), 0, "keys are forgotten when idle");
}

#[tokio::test]
async fn symlink_aliases_share_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.txt");
    std::fs::write(&target, "x").unwrap();
    let link = dir.path().join("alias.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(queue_key(&target).unwrap(), queue_key(&link).unwrap());

    // A file that does not exist yet, reached through a symlinked directory.
    let real_dir = dir.path().join("realdir");
    std::fs::create_dir(&real_dir).unwrap();
    let dir_link = dir.path().join("linkdir");
    std::os::unix::fs::symlink(&real_dir, &dir_link).unwrap();
    assert_eq!(
        queue_key(&real_dir.join("new.txt")).unwrap(),
        queue_key(&dir_link.join("new.txt")).unwrap()
    );

    let queue = FileMutationQueue::new();
    let q = queue.clone();
    let link2 = link.clone();
    let first = tokio::spawn(async move {
        q.run(&link2, async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Instant::now()
        })
        .await
        .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let second_start = queue.run(&target, async { Instant::now() }).await.unwrap();
    let first_end = first.await.unwrap();
    assert!(
        second_start >= first_end,
        "alias did not wait for the target's queue"
    );
}

#[tokio::test]
async fn different_files_overlap_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileMutationQueue::new();
    let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
    // Each holder waits for the other to be inside its own queue too: if
    // the two files shared a queue, neither would ever get there.
    let both_inside = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let (ba, bb) = (both_inside.clone(), both_inside);
    let a = queue.run(&pa, async move { ba.wait().await });
    let b = queue.run(&pb, async move { bb.wait().await });
    let joined = tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(a, b) }).await; // hang guard
    let (ra, rb) = joined.expect("the two files' holders ran at the same time");
    ra.unwrap();
    rb.unwrap();
}

#[tokio::test]
async fn a_failed_holder_does_not_break_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let queue = FileMutationQueue::new();
    let first: Result<(), String> = queue
        .run(&path, async { Err("boom".to_string()) })
        .await
        .unwrap();
    assert!(first.is_err());
    let second = queue.run(&path, async { 7 }).await.unwrap();
    assert_eq!(second, 7);
}

#[tokio::test]
async fn a_dropped_waiter_leaves_the_queue_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let queue = FileMutationQueue::new();
    let q = queue.clone();
    let p = path.clone();
    let holder = tokio::spawn(async move {
        q.run(&p, tokio::time::sleep(Duration::from_millis(100)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    // This waiter gives up before its turn.
    let _ = tokio::time::timeout(Duration::from_millis(10), queue.run(&path, async {})).await;
    holder.await.unwrap().unwrap();
    assert_eq!(queue.active_keys(), 0);
}
